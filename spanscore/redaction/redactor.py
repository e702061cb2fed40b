"""Redact a text: find with the policy's detectors, settle overlaps, replace each value by its placeholder.

``Placeholders`` is the mapping of one run (value -> ``<EMAIL_1>``), so the same value gets the same
placeholder in every text of the run and "the same email appears twice" survives for the judge. It lives
in memory for one scoring attempt and is never written anywhere: a placeholder cannot be turned back.

Work is bounded: a text longer than ``MAX_SCAN_CHARS`` is cut to it before the scan, and the rest is not
sent (what was not scanned cannot leave). Every detector is one RE2 pass plus checks on its candidates.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from spanscore.redaction.detectors import Detector, Finding, Hit

MAX_SCAN_CHARS = 1_000_000
"""The characters of one text that redaction reads; a judge prompt holds at most a few capped blocks."""
CUT_NOTE = "\n[cut: the rest of this text was not scanned for personal data, so it was not sent]"


@dataclass(frozen=True, slots=True)
class Redacted:
    """A redacted text and where, in the original, each finding was."""

    text: str
    findings: tuple[Finding, ...]
    cut: bool = False

    def counts(self) -> dict[str, int]:
        return dict(Counter(finding.detector for finding in self.findings))


class Placeholders:
    """The placeholders of one run: the same (detector, value) always gets the same ``<KIND_n>``."""

    __slots__ = ("_by_value", "_used")

    def __init__(self) -> None:
        self._by_value: dict[tuple[str, str], str] = {}
        self._used: Counter[str] = Counter()

    def for_value(self, detector: str, value: str) -> str:
        key = (detector, value)
        placeholder = self._by_value.get(key)
        if placeholder is None:
            self._used[detector] += 1
            placeholder = f"<{detector.upper()}_{self._used[detector]}>"
            self._by_value[key] = placeholder
        return placeholder


class Redactor:
    """One policy's detectors, applied together; immutable and shared by every run the policy covers."""

    def __init__(self, detectors: Sequence[Detector], *, max_chars: int = MAX_SCAN_CHARS) -> None:
        self.detectors = tuple(detectors)
        self.max_chars = max_chars

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(detector.name for detector in self.detectors)

    def redact(self, text: str, placeholders: Placeholders | None = None) -> Redacted:
        """``text`` with every finding replaced by its placeholder (from ``placeholders``, or fresh ones)."""
        cut = len(text) > self.max_chars
        scanned = text[: self.max_chars] if cut else text
        placeholders = placeholders or Placeholders()
        hits = self._settled(scanned)
        parts: list[str] = []
        position = 0
        for detector, (start, end, value) in hits:
            parts.append(scanned[position:start])
            parts.append(placeholders.for_value(detector, value))
            position = end
        parts.append(scanned[position:])
        if cut:
            parts.append(CUT_NOTE)
        findings = tuple(Finding(detector, start, end) for detector, (start, end, _) in hits)
        return Redacted("".join(parts), findings, cut)

    def _settled(self, text: str) -> list[tuple[str, Hit]]:
        """Every hit that no earlier detector (or a longer hit of the same detector) already covers, in order."""
        taken: list[tuple[str, Hit]] = []
        for detector in self.detectors:
            hits = sorted(_unique(detector.find(text)), key=lambda hit: (hit[0], -hit[1]))
            taken.extend((detector.name, hit) for hit in _without_overlaps(hits, taken))
        taken.sort(key=lambda item: item[1][0])
        return taken


def _unique(hits: Iterable[Hit]) -> set[Hit]:
    return {hit for hit in hits if hit[1] > hit[0]}


def _without_overlaps(hits: list[Hit], taken: list[tuple[str, Hit]]) -> list[Hit]:
    """``hits`` (sorted by start, longest first) that overlap neither ``taken`` nor each other."""
    claimed = sorted((hit[0], hit[1]) for _, hit in taken)
    kept: list[Hit] = []
    last_end = -1
    for hit in hits:
        start, end = hit[0], hit[1]
        if start < last_end or _overlaps(claimed, start, end):
            continue
        kept.append(hit)
        last_end = end
    return kept


def _overlaps(claimed: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether [start, end) meets a claimed span; claimed spans are disjoint and sorted, so one check does."""
    index = bisect.bisect_left(claimed, (end, end))
    return index > 0 and claimed[index - 1][1] > start
