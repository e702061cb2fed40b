"""How much text a built-in scorer reads: each text is cut to ``MAX_TEXT_CHARS``, and every cut is recorded.

A sender chooses how long an answer is, and a scorer's work grows with it. The built-in scorers'
text processing is linear (plain scans, and no backtracking regular expressions), but linear in a
megabyte is still a noticeable piece of a core, and a judge prompt grows in money as well as time.
So every text a built-in scorer reads (the input, the answer, the ground truth, each block a judge is
shown) goes through :func:`capped` first: beyond the limit it is cut, and the cut is recorded.

The record is per scoring attempt. ``Scorer`` opens one with :func:`recording_cuts` around its steps
and puts what was cut into ``ScoreResult.cuts`` (what -> original length in characters); the score
row carries it in its attributes (``text.cut``), so a score of a cut text says so wherever it is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

MAX_TEXT_CHARS = 100_000
"""The characters of one text a built-in scorer reads (docs/scorers.md, "Bounded work")."""

CUT_ATTRIBUTE = "text.cut"
"""The score-row attribute that lists what was cut, so that a score of a cut text says so."""

_CUTS: ContextVar[dict[str, int] | None] = ContextVar("spanscore_text_cuts", default=None)


def capped(text: str, what: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` cut to its first ``limit`` characters; a cut is recorded under ``what`` ("output", ...)."""
    if len(text) <= limit:
        return text
    cuts = _CUTS.get()
    if cuts is not None:
        cuts[what] = max(cuts.get(what, 0), len(text))
    return text[:limit]


@contextmanager
def recording_cuts() -> Iterator[dict[str, int]]:
    """Collect the cuts :func:`capped` makes inside the block (what -> original length)."""
    cuts: dict[str, int] = {}
    token = _CUTS.set(cuts)
    try:
        yield cuts
    finally:
        _CUTS.reset(token)


def describe_cuts(cuts: Mapping[str, int], limit: int = MAX_TEXT_CHARS) -> str:
    """One line for the score row: ``output: first 100000 of 160000 characters scored``."""
    return "; ".join(f"{what}: first {limit} of {length} characters scored" for what, length in sorted(cuts.items()))
