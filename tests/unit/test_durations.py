"""Look-back windows as typed: a window the store cannot answer is refused, never answered with nothing."""

from __future__ import annotations

import pytest

from spanscore.durations import parse_since
from spanscore.errors import ConfigError


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800.0), ("24h", 86400.0), ("7d", 604800.0), ("2w", 1209600.0)])
def test_usual_windows(text: str, seconds: float) -> None:
    assert parse_since(text) == seconds


@pytest.mark.parametrize("text", ["99999999999d", "1000000w", "0m", "0.0s", "3661d"])
def test_absurd_windows_are_refused(text: str) -> None:
    """Issue #37 item 14: an absurd preview `since` returned 0 candidates instead of 400."""
    with pytest.raises(ConfigError, match="at most 3660d"):
        parse_since(text)


def test_shapes_that_are_not_durations_are_refused() -> None:
    with pytest.raises(ConfigError, match="must look like 30m, 24h or 7d"):
        parse_since("yesterday")
