"""A close name for a misspelt one: every "unknown X" message offers the nearest known name, not the whole list."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str], cutoff: float = 0.75) -> str:
    """`` (did you mean 'port'?)`` when a known name is close to ``name``, else ``''``."""
    close = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=cutoff)
    return f" (did you mean {close[0]!r}?)" if close else ""
