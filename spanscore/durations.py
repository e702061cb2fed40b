"""Durations as people type them in commands and requests: '30m', '24h', '7d'."""

from __future__ import annotations

import re

from spanscore.errors import ConfigError

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


LONGEST_S = 10 * 366 * 86400
"""The longest look-back taken: ten years. A longer one reaches before 1970 or past the engine's dates, and
used to come back as an empty answer ("0 candidates") rather than an error."""


def duration_seconds(text: str) -> float:
    """'24h', '7d', '30m' -> seconds, for any size; a clear error for another shape."""
    match = _DURATION.match(text.strip())
    if not match:
        raise ConfigError(f"--since must look like 30m, 24h or 7d, got {text!r}")
    return float(match.group(1)) * _SECONDS[match.group(2)]


def parse_since(text: str) -> float:
    """'24h', '7d', '30m' -> seconds; a clear error for anything else, a zero window or one over ten years."""
    seconds = duration_seconds(text)
    if not 0 < seconds <= LONGEST_S:
        raise ConfigError(f"--since must be more than 0 and at most 3660d (ten years), got {text!r}")
    return seconds
