"""Counts in reasons read as English: "1 of 1 statement is toxic", "2 of 3 claims are supported".

A reason is what a person reads on the dashboard next to a low score; "of 1 statements" there reads as a
bug. The pages have the same helper (``Spanscore.count`` in ``static/common.js``).
"""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 statement``, ``3 statements``, ``0 replies`` (give ``plural`` where adding an s is wrong)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def agrees(n: int, singular: str = "is", plural: str = "are") -> str:
    """The verb for ``n`` things: ``is``/``are``, or any pair given."""
    return singular if n == 1 else plural


def share(n: int, total: int, noun: str, state: str) -> str:
    """``2 of 3 claims are supported``: how many of ``total`` things are in ``state``."""
    return f"{n} of {counted(total, noun)} {agrees(n)} {state}"


def because(score: object, summary: str, detail: str = "") -> str:
    """A judge scorer's reason, ``The score is 0.5 because <summary>.``, then the judge's own reasons if any."""
    return f"The score is {score} because {summary}." + (f" {detail}." if detail else "")
