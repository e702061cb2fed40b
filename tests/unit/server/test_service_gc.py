"""Start-up objects are frozen out of the cyclic collector, so full collections stay short under load."""

from __future__ import annotations

import gc
import sys

from spanscore.server.running import COLLECTOR_THRESHOLDS, freeze_startup_objects, tune_for_serving


def test_objects_alive_after_start_up_are_frozen() -> None:
    gc.unfreeze()
    keep = [[index] for index in range(1000)]  # long-lived containers, as start-up leaves them
    try:
        freeze_startup_objects()
        assert gc.get_freeze_count() >= len(keep)
    finally:
        gc.unfreeze()


def test_serving_collects_young_objects_less_often_and_the_whole_heap_rarely() -> None:
    """Full collections walked run assembly's held spans every few seconds for nothing (#43)."""
    before, interval = gc.get_threshold(), sys.getswitchinterval()
    try:
        tune_for_serving()
        assert gc.get_threshold() == COLLECTOR_THRESHOLDS
        young, middle, full = COLLECTOR_THRESHOLDS
        assert young > 700 and middle >= 10 and full > 10  # less often than CPython's defaults, never off
    finally:
        gc.set_threshold(*before)
        sys.setswitchinterval(interval)
        gc.unfreeze()
