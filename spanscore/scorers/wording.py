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
