"""RE2 for every redaction pattern: matching time is linear in the text, whatever the pattern or the input.

Run text is chosen by whoever sends spans; a backtracking engine would let one crafted answer stall a
scoring worker. RE2 refuses backreferences and lookaround, so the detectors check context in code
(checksums, neighbouring characters) after a linear scan instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 16 << 20


class Match(Protocol):
    def start(self, group: int = 0) -> int: ...

    def end(self, group: int = 0) -> int: ...

    def group(self, group: int = 0) -> str: ...


class Pattern(Protocol):
    def finditer(self, text: str) -> Iterator[Match]: ...

    def search(self, text: str) -> Match | None: ...

    def split(self, text: str) -> list[str]: ...


def compiled(pattern: str, *, ignore_case: bool = False) -> Pattern:
    """``pattern`` on RE2, or ``ValueError`` naming why RE2 refuses it."""
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _OPTIONS.max_mem
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(pattern, options=options)  # type: ignore[no-any-return]
    except re2.error as error:
        reason = error.args[0].decode("utf-8", "replace") if error.args and isinstance(error.args[0], bytes) else error
        raise ValueError(
            f"invalid regular expression {pattern!r}: {reason} (redaction patterns use RE2: no backreferences "
            "or lookaround, so matching time stays linear in the text)"
        ) from None
