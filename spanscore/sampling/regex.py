"""Regular expressions from rules run on RE2, an engine whose matching time is linear in the text.

A rule's ``where`` is evaluated for every finished run, on the service's event loop, against attribute
values a sender chose. Python's ``re`` backtracks: ``^(a+)+$`` against 50,000 ``a`` and one ``!`` takes
longer than any request may wait, and while it runs every listener (``/healthz`` included) stalls. RE2
decides any pattern in one pass over the text, so a filter costs what its input costs. The price is
the few constructs RE2 leaves out (backreferences, lookaround): those patterns are refused at load time
with the reason, never half-supported.
"""

from __future__ import annotations

from typing import Protocol

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported once, as a config problem, not on stderr too
_OPTIONS.max_mem = 8 << 20  # per compiled pattern: a pathological one is refused instead of growing


class Pattern(Protocol):
    def search(self, text: str) -> object | None: ...


def linear_time_regex(pattern: str) -> Pattern:
    """The compiled pattern, or ``ValueError`` naming why RE2 refuses it."""
    try:
        return re2.compile(pattern, options=_OPTIONS)  # type: ignore[no-any-return]
    except re2.error as error:
        reason = error.args[0].decode("utf-8", "replace") if error.args and isinstance(error.args[0], bytes) else error
        raise ValueError(
            f"invalid regular expression {pattern!r}: {reason} (filters use RE2, which has no backreferences "
            "or lookaround, so matching time stays linear in the text)"
        ) from None
