"""Durations as people type them in commands and requests: '30m', '24h', '7d'."""

from __future__ import annotations

import re

from spanscore.errors import ConfigError

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str) -> float:
    """'24h', '7d', '30m' -> seconds; a clear error for anything else."""
    match = _DURATION.match(text.strip())
    if not match:
        raise ConfigError(f"--since must look like 30m, 24h or 7d, got {text!r}")
    return float(match.group(1)) * _SECONDS[match.group(2)]
