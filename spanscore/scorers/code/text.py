"""Text helpers shared by the code scorers, matching JavaScript string semantics.

The reference scorers (@mastra/evals) run on JavaScript strings: lengths and
indices count UTF-16 code units and the regex whitespace class is ECMAScript's.
To reproduce their numbers on emoji and other astral characters, text is
turned into its UTF-16 form (surrogate pairs as two characters) before any
length-sensitive comparison, and whitespace uses the ECMAScript class.

Every text a code scorer reads comes through ``input_text``, ``output_text``
or ``reference_text``, which cut it to ``bounds.MAX_TEXT_CHARS`` (and record
the cut). Nothing here backtracks: the patterns are single character classes,
and trimming is ``str.strip``.
"""

from __future__ import annotations

import re

from spanscore.run import Run
from spanscore.scorers.bounds import capped as capped  # re-exported for the code scorers

JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
"""The characters ECMAScript's whitespace escape matches (a regex character-class body)."""
JS_WHITESPACE_CHARS = (
    "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""The same characters spelled out, for ``str.strip``."""

WHITESPACE_RUN = re.compile(f"[{JS_WHITESPACE}]+")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def js_trim(text: str) -> str:
    r"""``String.prototype.trim``: strip ECMAScript whitespace only.

    ``str.strip`` rather than a ``^\s+|\s+$`` pattern: the pattern's second branch is tried at every
    whitespace run inside the text and scans it to its end each time, quadratic in a long run.
    """
    return text.strip(JS_WHITESPACE_CHARS)


def collapse_whitespace(text: str) -> str:
    """Every whitespace run becomes one space and the ends are trimmed, as the reference does."""
    return js_trim(WHITESPACE_RUN.sub(" ", text))


def utf16(text: str) -> str:
    """``text`` with astral characters split into surrogate pairs, so ``len`` counts UTF-16 units."""
    if not _ASTRAL.search(text):
        return text
    return _ASTRAL.sub(_surrogates, text)


def _surrogates(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def input_text(run: Run) -> str:
    """The input side as the reference scorers read it: every input message's text joined with ``", "``."""
    if not run.input:
        return ""
    return capped(", ".join(m.content for m in run.input if m.role not in ("system", "tool")), "input")


def output_text(run: Run) -> str:
    """The answer exactly as the run page shows it (``Run.output_text``), so a live score is the score of it.

    Joining every output message would score an agent's whole turn (an empty step before a tool call, the
    tool's result) instead of its answer; ``spanscore.answer`` picks the answer once for every reader.
    """
    return capped(run.output_text or "", "output")


COMPARE_SIDES = ("input", "ground_truth")
"""What ``content_similarity`` and ``textual_difference`` compare the output with (option ``compare_with``)."""


def compare_side(value: object) -> str:
    """Validate the ``compare_with`` option."""
    if value not in COMPARE_SIDES:
        raise ValueError(f"option compare_with must be one of {list(COMPARE_SIDES)}, got {value!r}")
    return str(value)


def reference_text(run: Run, side: str) -> str:
    """The text the output is compared with: the input (the reference's choice) or the ground truth."""
    if side == "ground_truth":
        return capped(run.ground_truth or "", "ground_truth")
    return input_text(run)
