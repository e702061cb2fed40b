"""Detectors for numbers with a checksum or a registry behind them: cards, IBANs, national ids, phones.

A digit run alone says little (order numbers, timestamps and prices look alike), so every candidate from
the RE2 scan must also pass the number's own check: Luhn and an issuer prefix for cards, the ISO 7064
checksum for IBANs (python-stdnum), each national format's check digits (python-stdnum), and Google's
numbering plan for phones (phonenumbers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import phonenumbers
from stdnum import iban as stdnum_iban
from stdnum.br import cpf
from stdnum.ca import sin
from stdnum.es import dni, nie
from stdnum.fr import nir
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale
from stdnum.us import ssn

from spanscore.redaction.patterns import Pattern, compiled

Hit = tuple[int, int, str]

_CARD = compiled(r"\b\d(?:[ -]?\d){12,18}\b")
_CARD_PREFIXES = ("4", "34", "37", "30", "36", "38", "39", "35", "6011", "64", "65", "62", "5", "2")
_IBAN = compiled(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b")
_PHONE = compiled(r"(?:\+|\b)\d[\d ().\-/]{5,22}\d\b|\(\d{2,4}\)[\d .\-]{5,16}\d\b")
_DATE = compiled(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}|\d{1,2}:\d{2}")
_PHONE_WORDS = ("phone", "tel", "call", "mobile", "cell", "whatsapp", "fax", "sms", "text me", "dial")
# Format, then the library check that decides: each national id that python-stdnum validates and whose
# written form is distinctive enough to find in prose.
_NATIONAL: tuple[tuple[Pattern, Callable[[str], bool]], ...] = (
    (compiled(r"\b\d{3}-\d{2}-\d{4}\b"), ssn.is_valid),
    (compiled(r"\b\d{8}-?[A-Z]\b"), dni.is_valid),
    (compiled(r"\b[XYZ]-?\d{7}-?[A-Z]\b"), nie.is_valid),
    (compiled(r"\b[A-Z]{6}\d{2}[A-Z]\d{2}[A-Z]\d{3}[A-Z]\b"), codicefiscale.is_valid),
    (compiled(r"\b[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}\b"), nir.is_valid),
    (compiled(r"\b\d{3}\.\d{3}\.\d{3}-\d{2}\b"), cpf.is_valid),
    (compiled(r"\b[2-9]\d{3} \d{4} \d{4}\b"), aadhaar.is_valid),
    (compiled(r"\b\d{3}[ -]\d{3}[ -]\d{3}\b"), sin.is_valid),
)


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def find_cards(text: str) -> Iterator[Hit]:
    for match in _CARD.finditer(text):
        raw = match.group()
        separators = {c for c in raw if not c.isdigit()}
        if len(separators) > 1:
            continue  # "1234-5678 9012 3456" mixes separators: a list of numbers, not one card
        digits = _digits(raw)
        if 13 <= len(digits) <= 19 and digits.startswith(_CARD_PREFIXES) and luhn_valid(digits):
            yield match.start(), match.end(), digits


def find_ibans(text: str) -> Iterator[Hit]:
    for match in _IBAN.finditer(text):
        # The scan may run on into the next word ("DE89 3704 0044 0532 0130 00 TO"): the longest run of
        # groups that passes the checksum wins.
        groups = match.group().split(" ")
        for count in range(len(groups), 0, -1):
            compact = "".join(groups[:count])
            if len(compact) >= 15 and stdnum_iban.is_valid(compact):
                yield match.start(), match.start() + len(" ".join(groups[:count])), compact
                break


def find_national_ids(text: str) -> Iterator[Hit]:
    for pattern, is_valid in _NATIONAL:
        for match in pattern.finditer(text):
            value = match.group()
            if is_valid(value):
                yield match.start(), match.end(), value.replace(" ", "").replace("-", "").replace(".", "")


def phone_finder(region: str) -> Callable[[str], Iterator[Hit]]:
    """Phones in international form anywhere, and in ``region``'s national form."""

    def find_phones(text: str) -> Iterator[Hit]:
        for match in _PHONE.finditer(text):
            raw = match.group()
            digits = _digits(raw)
            if not 7 <= len(digits) <= 15 or _DATE.search(raw) or text[match.end() : match.end() + 1] == ":":
                continue  # dates and times are not phones
            if raw[0] != "+" and raw.isdigit() and not _near_phone_word(text, match.start()):
                continue  # a bare digit run is an order or account number unless the text says phone
            number = _parsed(raw, region)
            if number is not None:
                yield (
                    match.start(),
                    match.end(),
                    phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164),
                )

    return find_phones


def _parsed(raw: str, region: str) -> phonenumbers.PhoneNumber | None:
    try:
        number = phonenumbers.parse(raw, None if raw.startswith("+") else region)
    except phonenumbers.NumberParseException:
        return None
    if phonenumbers.is_valid_number(number):
        return number
    # Fictional exchanges (555-0100) are not "valid" but are written as phones; formatting shows intent.
    formatted = any(c in raw for c in "()-. ") and raw.count("/") == 0
    return number if formatted and phonenumbers.is_possible_number(number) else None


def _near_phone_word(text: str, start: int) -> bool:
    window = text[max(0, start - 24) : start].lower()
    return any(word in window for word in _PHONE_WORDS)
