"""Seeded makers of fake sensitive values and of look-alikes, plus the checks the labels must pass.

Every value is fake but has the exact shape a detector meets in real traffic (cards pass Luhn, IBANs pass
mod-97 and, where a national check digit exists, that too), so that a detector's recall is measured on values it
should catch and its precision on values it should leave alone.
"""

from __future__ import annotations

import random
import string

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


def luhn_ok(number: str) -> bool:
    nums = [int(c) for c in number if c.isdigit()]
    total = 0
    for i, d in enumerate(reversed(nums)):
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _luhn_complete(prefix: str) -> str:
    for last in "0123456789":
        if luhn_ok(prefix + last):
            return prefix + last
    raise AssertionError("unreachable")


def iban_ok(iban: str) -> bool:
    compact = iban.replace(" ", "").upper()
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _iban(country: str, bban: str) -> str:
    moved = bban + country + "00"
    check = 98 - int("".join(str(int(c, 36)) for c in moved)) % 97
    return f"{country}{check:02d}{bban}"


def digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def card(rng: random.Random) -> str:
    """A Luhn-valid number of a real brand's prefix and length, written as people paste it."""
    brand = rng.choice(["visa", "visa", "mc", "mc2", "amex", "discover"])
    if brand == "amex":
        num = _luhn_complete(rng.choice(["34", "37"]) + digits(rng, 12))
        return rng.choice([num, f"{num[:4]} {num[4:10]} {num[10:]}", f"{num[:4]}-{num[4:10]}-{num[10:]}"])
    prefix = {"visa": "4", "mc": str(rng.randint(51, 55)), "mc2": str(rng.randint(2221, 2720)), "discover": "6011"}
    num = _luhn_complete(prefix[brand] + digits(rng, 15 - len(prefix[brand])))
    groups = [num[i : i + 4] for i in range(0, 16, 4)]
    return rng.choice([num, " ".join(groups), "-".join(groups)])


def luhn_invalid_16(rng: random.Random) -> str:
    """Sixteen digits with a card-like prefix that fail Luhn: an order or account reference, not a card."""
    while True:
        num = rng.choice(["4", "5", "6011", "3"]) + digits(rng, 15)
        num = num[:16]
        if not luhn_ok(num):
            return rng.choice([num, " ".join(num[i : i + 4] for i in range(0, 16, 4))])


def iban(rng: random.Random) -> str:
    country = rng.choice(["DE", "GB", "FR", "AT", "CH", "BE", "IE"])
    if country == "DE":
        value = _iban("DE", digits(rng, 18))
    elif country in ("GB", "IE"):
        value = _iban(country, chars(rng, string.ascii_uppercase, 4) + digits(rng, 14))
    elif country == "AT":
        value = _iban("AT", digits(rng, 16))
    elif country == "CH":
        value = _iban("CH", digits(rng, 17))
    elif country == "BE":
        head = digits(rng, 10)
        key = int(head) % 97 or 97
        value = _iban("BE", f"{head}{key:02d}")
    else:
        bank, branch, account = digits(rng, 5), digits(rng, 5), digits(rng, 11)
        key = 97 - (89 * int(bank) + 15 * int(branch) + 3 * int(account)) % 97
        value = _iban("FR", f"{bank}{branch}{account}{key:02d}")
    if rng.random() < 0.5:
        return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
    return value


FIRST = ["anna", "lukas", "maria", "james", "priya", "chen", "sofia", "omar", "lea", "tom", "yuki", "carlos", "fatima"]
LAST = ["schmidt", "nguyen", "garcia", "obrien", "kowalski", "rossi", "dubois", "tanaka", "silva", "patel", "jensen"]
DOMAINS = [
    "gmail.com",
    "outlook.com",
    "yahoo.co.uk",
    "web.de",
    "gmx.net",
    "orange.fr",
    "acme-retail.com",
    "northwind.io",
    "proton.me",
    "icloud.com",
    "uni-heidelberg.de",
    "libero.it",
    "hotmail.es",
]


def email(rng: random.Random) -> str:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    local = rng.choice(
        [
            f"{first}.{last}",
            f"{first}{last[0]}",
            f"{first[0]}{last}{rng.randint(1, 99)}",
            f"{first}_{last}",
            f"{first}+orders",
            f"{last}.{first}",
        ]
    )
    if rng.random() < 0.15:
        local = local.capitalize()
    return f"{local}@{rng.choice(DOMAINS)}"


def placeholder_email(rng: random.Random) -> str:
    """Addresses at reserved names (RFC 2606/6761): nobody's data; scored as optional."""
    local = rng.choice(["user", "jane.doe", "you", "admin", "alice"])
    return f"{local}@{rng.choice(['example.com', 'example.org', 'example.net', 'test.example', 'mail.invalid'])}"


def phone(rng: random.Random) -> str:
    """International and national formats from numbering plans, with plausible area codes."""

    def d(n: int) -> str:  # no block starts with 0
        return str(rng.randint(1, 9)) + digits(rng, n - 1)

    fmt = rng.randrange(16)
    area = rng.choice(["212", "312", "415", "617", "702", "206"])
    exch = rng.choice([str(n) for n in range(201, 990) if n % 100 != 11])
    options = [
        f"+1 {area} {exch} {d(4)}",
        f"({area}) {exch}-{d(4)}",
        f"{area}-{exch}-{d(4)}",
        f"+1-{area}-{exch}-{d(4)}",
        f"+44 20 7946 {d(4)}",
        f"07{rng.randint(400, 999)} {d(6)}",
        f"+44 7{rng.randint(400, 999)} {d(6)}",
        f"+49 30 {d(8)}",
        f"0151 {d(8)}",
        f"+49 1{rng.choice(['51', '60', '71', '76'])} {d(8)}",
        f"+33 6 {d(2)} {d(2)} {d(2)} {d(2)}",
        f"06 {d(2)} {d(2)} {d(2)} {d(2)}",
        f"+91 9{d(4)} {d(5)}",
        f"+55 11 9{d(4)}-{d(4)}",
        f"+81 3-{d(4)}-{d(4)}",
        f"090-{d(4)}-{d(4)}",
    ]
    return options[fmt]


def ip(rng: random.Random) -> str:
    if rng.random() < 0.2:
        groups = f"{rng.randint(1, 0xFFFF):x}:{rng.randint(1, 0xFFFF):x}"
        return f"2a02:810{rng.randint(0, 9)}:{groups}::{rng.randint(1, 0xFFF):x}"
    first = rng.choice([10, 172, 192, 81, 93, 145, 188, 203, 34, 52])
    return f"{first}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"


def doc_ip(rng: random.Random) -> str:
    """Documentation ranges (RFC 5737/3849): nobody's address; scored as optional."""
    return rng.choice(
        [
            f"192.0.2.{rng.randint(1, 254)}",
            f"198.51.100.{rng.randint(1, 254)}",
            f"203.0.113.{rng.randint(1, 254)}",
            f"2001:db8::{rng.randint(1, 0xFFF):x}",
        ]
    )


def ssn(rng: random.Random) -> str:
    area = rng.choice([n for n in range(1, 900) if n != 666])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


def nino(rng: random.Random) -> str:
    first = rng.choice("ABCEGHJKLMNOPRSTWXYZ")
    second = rng.choice("ABCEGHJKLMNPRSTWXYZ")
    if first + second in {"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"}:
        second = "A"
    body = digits(rng, 6)
    return rng.choice(
        [
            f"{first}{second}{body}{rng.choice('ABCD')}",
            f"{first}{second} {body[:2]} {body[2:4]} {body[4:]} {rng.choice('ABCD')}",
        ]
    )


def dni(rng: random.Random) -> str:
    n = rng.randint(10_000_000, 99_999_999)
    return f"{n}{'TRWAGMYFPDXBNJZSQVHLCKE'[n % 23]}"


def bsn(rng: random.Random) -> str:
    while True:
        head = digits(rng, 8)
        for last in range(10):
            num = head + str(last)
            total = sum(int(c) * w for c, w in zip(num[:8], range(9, 1, -1), strict=True)) - int(num[8])
            if num[0] != "0" and total % 11 == 0:
                return num


def cpf(rng: random.Random) -> str:
    base = [int(c) for c in digits(rng, 9)]
    for length in (9, 10):
        s = sum(v * w for v, w in zip(base, range(length + 1, 1, -1), strict=True))
        base.append((s * 10 % 11) % 10)
    n = "".join(map(str, base))
    return f"{n[:3]}.{n[3:6]}.{n[6:9]}-{n[9:]}"


def pesel(rng: random.Random) -> str:
    head = f"{rng.randint(50, 99):02d}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{digits(rng, 4)}"
    weights = [1, 3, 7, 9, 1, 3, 7, 9, 1, 3]
    check = (10 - sum(int(c) * w for c, w in zip(head, weights, strict=True)) % 10) % 10
    return head + str(check)


def personnummer(rng: random.Random) -> str:
    head = f"{rng.randint(50, 99):02d}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{digits(rng, 3)}"
    return f"{head[:6]}-{_luhn_complete(head)[6:]}"


NATIONAL_IDS = {
    "SSN": ssn,
    "NI number": nino,
    "DNI": dni,
    "BSN": bsn,
    "CPF": cpf,
    "PESEL": pesel,
    "personnummer": personnummer,
}


def national_id(rng: random.Random) -> tuple[str, str]:
    """A (label word, id) pair: the word tells a human reader, and the builder's context rules, what it is."""
    word = rng.choice(sorted(NATIONAL_IDS))
    return word, NATIONAL_IDS[word](rng)


def secret(rng: random.Random) -> str:
    """Provider keys in their published shapes, plus generic high-entropy bearer tokens."""

    def c(alphabet: str, n: int) -> str:
        return chars(rng, alphabet, n)

    upper32 = string.ascii_uppercase + "234567"
    shapes = [
        f"sk-{c(ALNUM, 20)}T3BlbkFJ{c(ALNUM, 20)}",
        f"sk-proj-{c(URLSAFE, 64)}T3BlbkFJ{c(URLSAFE, 64)}",
        f"sk-ant-api03-{c(URLSAFE, 93)}AA",
        f"AKIA{c(upper32, 16)}",
        f"ghp_{c(ALNUM, 36)}",
        f"github_pat_11{c(string.ascii_uppercase + string.digits, 20)}_{c(ALNUM, 59)}",
        f"xoxb-{digits(rng, 12)}-{digits(rng, 13)}-{c(ALNUM, 24)}",
        f"sk_live_{c(ALNUM, 24)}",
        f"rk_live_{c(ALNUM, 99)}",
        f"AIza{c(URLSAFE, 35)}",
        f"hf_{c(string.ascii_letters, 34)}",
        f"glpat-{c(URLSAFE, 20)}",
        f"SG.{c(URLSAFE, 22)}.{c(URLSAFE, 43)}",
        f"npm_{c(ALNUM, 36)}",
        f"whsec_{c(ALNUM, 32)}",
        f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{c(URLSAFE, 60)}.{c(URLSAFE, 43)}",
        c(ALNUM + "/+", 40),
    ]
    return rng.choice(shapes)


def aws_secret_key(rng: random.Random) -> str:
    return chars(rng, ALNUM + "/+", 40)


def url_credentials(rng: random.Random) -> tuple[str, str, str]:
    """(before, user:pass@, after): the labelled part is the credential segment of the URL."""
    user = rng.choice(["admin", "app_user", "svc-etl", "deploy", "root", "reporting"])
    pw = rng.choice([chars(rng, ALNUM, rng.randint(10, 20)), "hunter2", "S3cr3t!2024", "Winter2024"])
    scheme, rest = rng.choice(
        [
            ("postgres://", "db.internal:5432/orders"),
            ("mysql://", "mysql-prod:3306/crm"),
            ("https://", "registry.corp.net/v2/"),
            ("amqp://", "rabbit.svc:5672/%2f"),
            ("mongodb+srv://", "cluster0.ab1cd.mongodb.net/app"),
            ("ftp://", "files.acme.io/in/"),
        ]
    )
    return scheme, f"{user}:{pw}@", rest
