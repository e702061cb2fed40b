r"""Text from spans and requests made safe to print: control characters shown, never obeyed.

Attribute values, rule names and request fields are chosen by whoever sends spans or holds a token.
Printed raw, ``\x1b[2J`` clears an operator's terminal, OSC 52 writes to their clipboard, and a newline
in a logged value forges a whole log line. Every place that prints such text to a terminal or a log
passes it through here: each control character (C0, DEL, C1, and the Unicode line, paragraph and
bidirectional-override characters) becomes a visible escape like ``\x1b`` or ``\u202e``.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str, keep: str = "") -> str:
    """``text`` with every control character not in ``keep`` written as a visible escape."""

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        if char in keep:
            return char
        if char in _SHORT:
            return _SHORT[char]
        return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"

    return _CONTROL.sub(escape, text)


def say(text: str) -> None:
    """Print a line built from text others chose (Keeper data, API answers), escaped; newlines stay lines."""
    print(printable(text, keep="\n"))
