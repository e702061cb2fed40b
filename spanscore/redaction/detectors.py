"""The detectors by name: the built-in ones in the order they win overlaps, and the operator's own.

A detector is a name and a finder (text -> ``(start, end, value)`` hits). When two detectors claim
overlapping text, the earlier one in ``BUILTIN_DETECTORS`` keeps it (a URL's credentials before the email
they contain, an IBAN before the card-like digits inside it); custom detectors come after the built-ins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from spanscore.redaction.addresses import find_emails, find_ips, find_url_credentials
from spanscore.redaction.numbers import find_cards, find_ibans, find_national_ids, phone_finder
from spanscore.redaction.patterns import Pattern, compiled
from spanscore.redaction.secrets import find_secrets

Hit = tuple[int, int, str]
Finder = Callable[[str], Iterator[Hit]]
CUSTOM_PREFIX = "custom:"
DEFAULT_PHONE_REGIONS = ("US", "GB", "DE", "FR", "ES", "IT", "NL", "IN", "BR", "JP", "CA", "AU")
"""Whose national number formats are read without a ``+``: the first region that knows a number wins."""


@dataclass(frozen=True, slots=True)
class Finding:
    """What one detector masked: offsets into the text it was given (end exclusive); never the value."""

    detector: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Detector:
    name: str
    find: Finder


def builtin_detectors(phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS) -> dict[str, Detector]:
    """Every built-in detector, in the order in which they win overlapping text."""
    finders: tuple[tuple[str, Finder], ...] = (
        ("url_credentials", find_url_credentials),
        ("secret", find_secrets),
        ("email", find_emails),
        ("iban", find_ibans),
        ("card", find_cards),
        ("national_id", find_national_ids),
        ("ip", find_ips),
        ("phone", phone_finder(phone_regions)),
    )
    return {name: Detector(name, find) for name, find in finders}


BUILTIN_DETECTORS: tuple[str, ...] = tuple(builtin_detectors())


def pattern_detector(name: str, pattern: str, *, ignore_case: bool = False) -> Detector:
    """``custom:<name>``: every match of an RE2 pattern (the first group's text when the pattern has one)."""
    regex = compiled(pattern, ignore_case=ignore_case)
    return Detector(CUSTOM_PREFIX + name, _pattern_finder(regex))


def words_detector(name: str, words: Iterable[str], *, ignore_case: bool = True) -> Detector:
    """``custom:<name>``: each listed word or phrase where it stands as a whole word."""
    listed = sorted({w for w in words if w.strip()}, key=len, reverse=True)
    if not listed:
        raise ValueError(f"word list {name!r} is empty: list at least one word")
    escaped = "|".join(_escaped(word) for word in listed)
    regex = compiled(rf"(?:^|\b|\B)(?:{escaped})(?:\b|\B|$)", ignore_case=ignore_case)
    return Detector(CUSTOM_PREFIX + name, _word_finder(regex))


def _escaped(word: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "\\" + c if c.isascii() else c for c in word)


def _pattern_finder(regex: Pattern) -> Finder:
    def find(text: str) -> Iterator[Hit]:
        for match in regex.finditer(text):
            group = 1 if _has_group(match) else 0
            if match.end(group) > match.start(group):
                yield match.start(group), match.end(group), match.group(group)

    return find


def _has_group(match: object) -> bool:
    try:
        match.group(1)  # type: ignore[attr-defined]
    except (IndexError, ValueError):
        return False
    return True


def _word_finder(regex: Pattern) -> Finder:
    def find(text: str) -> Iterator[Hit]:
        for match in regex.finditer(text):
            start, end = match.start(), match.end()
            if text[start - 1 : start].isalnum() or text[end : end + 1].isalnum():
                continue  # inside a longer word
            if end > start:
                yield start, end, match.group().lower()

    return find
