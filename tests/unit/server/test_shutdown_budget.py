"""Shutdown fits in shutdown_timeout_s: the scoring drain must end first, then scores and spans flush."""

from __future__ import annotations

import pytest

from spanscore.config import load_config
from spanscore.errors import ConfigError


def test_defaults_leave_time_after_the_drain() -> None:
    config = load_config(None, environ={})
    assert config.scoring.drain_timeout_s < config.shutdown_timeout_s


@pytest.mark.parametrize("drain", ["30", "45"])
def test_a_drain_as_long_as_the_shutdown_is_refused(drain: str) -> None:
    environ = {"SPANSCORE_SCORING__DRAIN_TIMEOUT_S": drain, "SPANSCORE_SHUTDOWN_TIMEOUT_S": "30"}
    with pytest.raises(ConfigError, match=r"scoring.drain_timeout_s \(\d+\) must be shorter than shutdown_timeout_s"):
        load_config(None, environ=environ)
