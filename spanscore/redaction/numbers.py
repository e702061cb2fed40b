"""Detectors for numbers with a checksum or a registry behind them: cards, IBANs, national ids, phones.

A digit run alone says little (order numbers, timestamps and prices look alike), so every candidate from
the RE2 scan must also pass the number's own check: Luhn and an issuer prefix for cards, the ISO 7064
checksum for IBANs (their check digits), each national format's check digits (their check digits), and Google's
numbering plan for phones (phonenumbers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import phonenumbers

from spanscore.redaction.checksums import (
    aadhaar_valid,
    bsn_valid,
    codice_fiscale_valid,
    cpf_valid,
    dni_valid,
    iban_valid,
    luhn_valid,
    nie_valid,
    nir_valid,
    personnummer_valid,
    pesel_valid,
    sin_valid,
    steuer_id_valid,
)
from spanscore.redaction.patterns import Pattern, compiled

Hit = tuple[int, int, str]

_CARD = compiled(r"\b\d(?:[ -]?\d){12,18}\b")
_CARD_PREFIXES = ("4", "34", "37", "30", "36", "38", "39", "35", "6011", "64", "65", "62", "5", "2")
_IBAN = compiled(r"(?i)\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b")
"""Case-blind: people type IBANs in lower case too (the check digits decide, on the upper-cased value)."""
_PHONE = compiled(r"(?:\+|\b)\d[\d ().\-/]{5,22}\d\b|\(\d{2,4}\)[\d .\-]{5,16}\d\b")
_DATE = compiled(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}|\d{1,2}:\d{2}")
_NON_DIGITS = compiled(r"[^0-9]+")
_E164 = phonenumbers.PhoneNumberFormat.E164
_NATIONAL_FORMAT = phonenumbers.PhoneNumberFormat.NATIONAL
_PHONE_WORDS = ("phone", "tel", "call", "mobile", "cell", "whatsapp", "fax", "sms", "text me", "dial")
_CODE_WORDS = ("product", "sku", "part", "model", "item", "order", "ref", "tracking", "invoice", "serial", "pn")
_NINO = compiled(r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
_NINO_BARRED = frozenset({"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"})
_SSN = compiled(r"\b(\d{3})-(\d{2})-(\d{4})\b")
_ID_WORD_WINDOW = 40
"""How many characters before a number may hold the word that names it."""


def _ssn_valid(area: str, group: str, serial: str) -> bool:
    """The SSA's structure (no 000, 666 or 9xx area, no 00 group, no 0000 serial); advertised numbers included."""
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _ssn_digits_valid(digits: str) -> bool:
    return _ssn_valid(digits[:3], digits[3:5], digits[5:])


# Written forms distinctive enough to find on their own, each with their check digits's check.
_NATIONAL: tuple[tuple[Pattern, Callable[[str], bool]], ...] = (
    (compiled(r"\b\d{8}-?[A-Z]\b"), dni_valid),
    (compiled(r"\b[XYZ]-?\d{7}-?[A-Z]\b"), nie_valid),
    (compiled(r"\b[A-Z]{6}\d{2}[A-Z]\d{2}[A-Z]\d{3}[A-Z]\b"), codice_fiscale_valid),
    (compiled(r"\b\d{3}\.\d{3}\.\d{3}-\d{2}\b"), cpf_valid),
)
# Plain digit runs that a check digit alone cannot tell from an order number: only after a word naming them.
_NAMED_NATIONAL: tuple[tuple[Pattern, Callable[[str], bool], tuple[str, ...]], ...] = (
    (compiled(r"\b\d{9}\b"), bsn_valid, ("bsn", "burgerservicenummer", "citizen service")),
    (compiled(r"\b\d{11}\b"), pesel_valid, ("pesel",)),
    (compiled(r"\b\d{11}\b"), steuer_id_valid, ("steuer-id", "steuerid", "idnr", "steueridentifikationsnummer")),
    (compiled(r"\b(?:\d{2})?\d{6}[-+]?\d{4}\b"), personnummer_valid, ("personnummer", "personal identity")),
    (compiled(r"\b[2-9]\d{3} ?\d{4} ?\d{4}\b"), aadhaar_valid, ("aadhaar", "aadhar")),
    (compiled(r"\b\d{3}[ -]?\d{3}[ -]?\d{3}\b"), sin_valid, ("sin", "social insurance")),
    (compiled(r"\b[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}\b"), nir_valid, ("nir", "sécu")),
    (compiled(r"\b\d{9}\b"), _ssn_digits_valid, ("ssn", "social security")),
)


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


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
            compact = "".join(groups[:count]).upper()
            if len(compact) >= 15 and iban_valid(compact):
                yield match.start(), match.start() + len(" ".join(groups[:count])), compact
                break


def find_national_ids(text: str) -> Iterator[Hit]:
    for match in _SSN.finditer(text):
        if _ssn_valid(match.group(1), match.group(2), match.group(3)):
            yield match.start(), match.end(), _compact(match.group())
    for match in _NINO.finditer(text):
        if match.group()[:2] not in _NINO_BARRED:
            yield match.start(), match.end(), _compact(match.group())
    for pattern, is_valid in _NATIONAL:
        for match in pattern.finditer(text):
            if is_valid(match.group()):
                yield match.start(), match.end(), _compact(match.group())
    lowered = text.lower()
    for pattern, is_valid, words in _NAMED_NATIONAL:
        for match in pattern.finditer(text):
            if _named_before(lowered, match.start(), words) and is_valid(match.group()):
                yield match.start(), match.end(), _compact(match.group())


def _compact(value: str) -> str:
    return "".join(c for c in value if c.isalnum()).upper()


def _named_before(lowered: str, start: int, words: tuple[str, ...]) -> bool:
    """Whether one of ``words`` stands as a word in the few characters before ``start``."""
    window = lowered[max(0, start - _ID_WORD_WINDOW) : start]
    for word in words:
        index = window.find(word)
        while index >= 0:
            before, after = window[index - 1 : index], window[index + len(word) : index + len(word) + 1]
            if not before.isalpha() and not after.isalpha():
                return True
            index = window.find(word, index + 1)
    return False


def phone_finder(regions: tuple[str, ...]) -> Callable[[str], Iterator[Hit]]:
    """Phones in international form anywhere, and in the national form of any of ``regions`` (first wins)."""

    def find_phones(text: str) -> Iterator[Hit]:
        lowered = text.lower()
        for match in _PHONE.finditer(text):
            raw, start, end = match.group(), match.start(), match.end()
            digits = _digits(raw)
            if not 7 <= len(digits) <= 15 or _DATE.search(raw) or _inside_code(text, start, end):
                continue  # dates, times, and pieces of longer codes (415-867-2231-X) are not phones
            says_phone = _named_before(lowered, start, _PHONE_WORDS)
            if not says_phone and _named_before(lowered, start, _CODE_WORDS):
                continue  # "part 413-009-9715": the text says what it is
            if raw[0] != "+" and raw.isdigit() and not _labelled_phone(lowered, start):
                continue  # a bare digit run is an order number or a timestamp unless labelled a phone
            number = _as_written_phone(raw, regions)
            if number is not None:
                yield start, end, phonenumbers.format_number(number, _E164)

    return find_phones


def _labelled_phone(lowered: str, start: int) -> bool:
    """A phone word right before ``start``, with no other value between them ("phone: 4155552671")."""
    window = lowered[max(0, start - 20) : start]
    last = max(_last_word(window, word) for word in _PHONE_WORDS)
    return last >= 0 and not any(c.isdigit() or c in ",#" for c in window[last:])


def _last_word(window: str, word: str) -> int:
    """Where ``word`` last starts as a word of its own in ``window`` ("tel" in "Bestellnummer" does not), or -1."""
    index = window.rfind(word)
    while index >= 0:
        if not window[index - 1 : index].isalpha() and not window[index + len(word) : index + len(word) + 1].isalpha():
            return index
        index = window.rfind(word, 0, index)
    return -1


def _inside_code(text: str, start: int, end: int) -> bool:
    before, after = text[max(0, start - 2) : start], text[end : end + 2]
    joined_after = len(after) == 2 and after[0] in "-/." and after[1].isalnum()
    joined_before = len(before) == 2 and before[1] in "-/." and before[0].isalnum()
    return joined_after or joined_before or text[end : end + 1] == ":"


def _as_written_phone(raw: str, regions: tuple[str, ...]) -> phonenumbers.PhoneNumber | None:
    """The number ``raw`` is, when a numbering plan knows it and it is written the way that country writes phones.

    With a ``+`` the plan alone decides. Without one, the writing must fit a region: its digit groups those of
    the library's national format (which also admits fictional-range numbers such as 07700 900461), or, for a
    valid number, its digits starting with the region's trunk prefix (0151 23456789). That is what tells a
    phone from an order number "2025-004417" or a product code "1707-796-294" that happen to be dialable.
    """
    if raw.startswith("+"):
        number = _parse(raw, None)
        return number if number is not None and phonenumbers.is_valid_number(number) else None
    groups = [len(g) for g in _NON_DIGITS.split(raw) if g]
    for region in regions:
        number = _parse(raw, region)
        if number is None or not phonenumbers.is_possible_number(number):
            continue
        written = [len(g) for g in _NON_DIGITS.split(phonenumbers.format_number(number, _NATIONAL_FORMAT)) if g]
        if groups == written or groups[1:] == written and raw.startswith(str(number.country_code)):
            return number
        prefix = _trunk_prefix(region)
        if prefix and prefix != "1" and raw.lstrip("(").startswith(prefix) and phonenumbers.is_valid_number(number):
            return number
    return None


def _parse(raw: str, region: str | None) -> phonenumbers.PhoneNumber | None:
    try:
        return phonenumbers.parse(raw, region)
    except phonenumbers.NumberParseException:
        return None


def _trunk_prefix(region: str) -> str | None:
    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    return None if metadata is None else metadata.national_prefix
