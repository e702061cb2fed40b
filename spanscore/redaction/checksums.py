"""Check digits of the numbers redaction finds: IBAN (ISO 7064 mod 97-10) and national ids.

Written here rather than taken from python-stdnum, whose LGPL licence the project's dependency check refuses
(tests/unit/test_dependency_licences.py). Each function takes the value as written (spaces, dots and dashes
allowed) and answers whether its check digits hold; none validates more than its checksum and basic shape.
"""

from __future__ import annotations

from collections import Counter

IBAN_LENGTHS = dict(
    item.split(":")
    for item in (
        "AD:24 AE:23 AL:28 AT:20 AZ:28 BA:20 BE:16 BG:22 BH:22 BR:29 BY:28 CH:21 CR:22 CY:28 CZ:24 DE:22 DK:18 "
        "DO:28 EE:20 EG:29 ES:24 FI:18 FO:18 FR:27 GB:22 GE:22 GI:23 GL:18 GR:27 GT:28 HR:21 HU:28 IE:22 IL:23 "
        "IQ:23 IS:26 IT:27 JO:30 KW:30 KZ:20 LB:28 LC:32 LI:21 LT:20 LU:20 LV:21 MC:27 MD:24 ME:22 MK:19 MR:27 "
        "MT:31 MU:30 NL:18 NO:15 PK:24 PL:28 PS:29 PT:25 QA:29 RO:24 RS:22 SA:24 SC:31 SE:24 SI:19 SK:24 SM:27 "
        "ST:25 SV:28 TL:23 TN:24 TR:26 UA:29 VA:22 VG:24 XK:20"
    ).split()
)
"""Country -> IBAN length, from the IBAN registry (ISO 13616)."""

_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"
_CF_ODD_VALUES = (1, 0, 5, 7, 9, 13, 15, 17, 19, 21)  # digits 0-9 (and letters A-J) in odd positions
_CF_ODD_LETTERS = (2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23)  # letters K-Z in odd positions
_CF_ODD = dict(zip("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", _CF_ODD_VALUES * 2 + _CF_ODD_LETTERS, strict=True))
_VERHOEFF_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5), (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7), (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3), (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)  # fmt: skip
_VERHOEFF_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4), (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7), (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)  # fmt: skip


def compact(value: str) -> str:
    return "".join(c for c in value if c.isalnum()).upper()


def luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def iban_valid(value: str) -> bool:
    iban = compact(value)
    if len(iban) != int(IBAN_LENGTHS.get(iban[:2], 0)) or not iban[2:4].isdigit() or not iban.isalnum():
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def dni_valid(value: str) -> bool:
    number = compact(value)
    return len(number) == 9 and number[:8].isdigit() and _DNI_LETTERS[int(number[:8]) % 23] == number[8]


def nie_valid(value: str) -> bool:
    number = compact(value)
    return len(number) == 9 and number[0] in "XYZ" and dni_valid(str("XYZ".index(number[0])) + number[1:])


def codice_fiscale_valid(value: str) -> bool:
    code = compact(value)
    if len(code) != 16:
        return False
    total = sum(_CF_ODD[c] if i % 2 == 0 else int(c, 36) - (10 if c.isalpha() else 0) for i, c in enumerate(code[:15]))
    return chr(ord("A") + total % 26) == code[15]


def cpf_valid(value: str) -> bool:
    digits = [int(c) for c in compact(value)]
    if len(digits) != 11 or len(set(digits)) == 1:
        return False
    first = sum(d * (10 - i) for i, d in enumerate(digits[:9])) * 10 % 11 % 10
    second = sum(d * (11 - i) for i, d in enumerate(digits[:10])) * 10 % 11 % 10
    return digits[9] == first and digits[10] == second


def bsn_valid(value: str) -> bool:
    digits = [int(c) for c in compact(value)]
    return len(digits) == 9 and (sum(d * (9 - i) for i, d in enumerate(digits[:8])) - digits[8]) % 11 == 0


def pesel_valid(value: str) -> bool:
    """Polish PESEL: a birth date (the month carries the century: +80, +0, +20, +40, +60) and a weighted check."""
    digits = [int(c) for c in compact(value)]
    if len(digits) != 11:
        return False
    month, day = (digits[2] * 10 + digits[3]) % 20, digits[4] * 10 + digits[5]
    weights = (1, 3, 7, 9, 1, 3, 7, 9, 1, 3)
    check = (10 - sum(d * w for d, w in zip(digits, weights, strict=False)) % 10) % 10
    return 1 <= month <= 12 and 1 <= day <= 31 and check == digits[10]


def steuer_id_valid(value: str) -> bool:
    """German tax id (IdNr): ISO 7064 mod 11,10 over the first ten digits; never starts with 0."""
    number = compact(value)
    if len(number) != 11 or not number.isdigit() or number[0] == "0":
        return False
    repeated = [count for count in Counter(number[:10]).values() if count > 1]
    if len(repeated) != 1 or repeated[0] > 3:
        return False  # one digit of the first ten appears twice or three times, every other at most once
    product = 10
    for char in number[:10]:
        total = (int(char) + product) % 10 or 10
        product = total * 2 % 11
    return (11 - product) % 10 == int(number[10])


def personnummer_valid(value: str) -> bool:
    """Swedish personal identity number: a date (day + 60 for coordination numbers) and Luhn over ten digits."""
    digits = "".join(c for c in value if c.isdigit())[-10:]
    if len(digits) != 10:
        return False
    month, day = int(digits[2:4]), int(digits[4:6])
    return 1 <= month <= 12 and (1 <= day <= 31 or 61 <= day <= 91) and luhn_valid(digits)


def aadhaar_valid(value: str) -> bool:
    number = compact(value)
    if len(number) != 12 or not number.isdigit() or number[0] in "01":
        return False
    check = 0
    for index, char in enumerate(reversed(number)):
        check = _VERHOEFF_D[check][_VERHOEFF_P[index % 8][int(char)]]
    return check == 0


def sin_valid(value: str) -> bool:
    number = compact(value)
    return len(number) == 9 and number.isdigit() and number[0] not in "08" and luhn_valid(number)


def nir_valid(value: str) -> bool:
    """French social security number: 13 characters (Corsica's 2A/2B included) and a mod-97 key."""
    number = compact(value)
    if len(number) != 15 or not number[13:].isdigit():
        return False
    body = number[:13]
    corsica = {"2A": "19", "2B": "18"}.get(body[5:7])
    if corsica is not None:
        body = body[:5] + corsica + body[7:]
    return body.isdigit() and 97 - int(body) % 97 == int(number[13:])
