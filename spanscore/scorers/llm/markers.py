"""Defusing data-block markers inside judged text.

Judged text sits between ``<<<BEGIN name>>>`` and ``<<<END name>>>`` and the
judge is told that everything inside is data. A text that writes its own
``<<<END answer>>>`` (or ``<<< end answer >>>``, ``＜＜＜END ANSWER＞＞＞``,
``‹‹‹end›››``...) and follows it with instructions would otherwise step out
of its block. Matching the exact marker is not enough: a model reads any
case, spacing or look-alike form the same way. So every run of two or more
opening-angle look-alikes that leads into ``begin`` or ``end`` (after the
same normalisation) loses its angles: ``<<<END`` becomes ``(((END``, which
no reader can take for a marker, and the rest of the text is left as it is.

The search runs on RE2, whose time is linear in the text: the pattern's repeated group of angles, as a
backtracking ``re`` pattern, rescanned a long run of ``<`` from each of its characters. RE2 has no
lookahead, so "not followed by a letter" is checked on the one character after each match.
"""

from __future__ import annotations

import re
import unicodedata

import re2

__all__ = ["defuse_markers"]

_OPEN_ALIKES = "<\uff1c\ufe64\u02c2\u2039\u00ab\u3008\u27e8\u2329\u276e\u276c\u1438\u2264\u226a\u22d8"
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
# Letters of "begin"/"end" that NFKC leaves alone but a reader takes for Latin ones (Cyrillic, Greek).
_LETTER_ALIKES = {
    "\u0435": "e",
    "\u0415": "e",
    "\u0456": "i",
    "\u0406": "i",
    "\u0501": "d",
    "\u0261": "g",
    "\u0412": "b",
    "\u03b5": "e",
    "\u0395": "e",
    "\u039d": "n",
    "\u0399": "i",
    "\u0392": "b",
}
_OPTIONS = re2.Options()
_OPTIONS.case_sensitive = False
_OPTIONS.log_errors = False
# Whitespace is one space in the shadow text (below), so the pattern needs no Unicode whitespace class.
_MARKER = re2.compile(r"<(?:[ _*\-]*<)+[ _*\-/]*(?:end|begin)", options=_OPTIONS)
_LETTER = re.compile(r"[a-z]", re.IGNORECASE)


def _shadow_char(char: str) -> str:
    """One character, normalised for matching; always exactly one character so positions line up."""
    if char in _OPEN_ALIKES:
        return "<"
    if char in _INVISIBLE or char.isspace():
        return " "
    if char in _LETTER_ALIKES:
        return _LETTER_ALIKES[char]
    folded = unicodedata.normalize("NFKC", char).lower()
    return folded if len(folded) == 1 else char


def defuse_markers(text: str) -> str:
    """``text`` with every marker-like ``<<<begin``/``<<<end`` opening rewritten so it cannot act as a marker."""
    shadow = "".join(_shadow_char(char) for char in text)
    if "<" not in shadow:
        return text
    pieces: list[str] = []
    position = 0
    for match in _MARKER.finditer(shadow):
        start, end = match.span()
        if _LETTER.match(shadow, end):
            continue  # "<<<endless": a word that starts like a marker is not one
        pieces.append(text[position:start])
        opening = text[start:end]
        pieces.append("".join("(" if shadow[start + i] == "<" else ch for i, ch in enumerate(opening)))
        position = end
    pieces.append(text[position:])
    return "".join(pieces)
