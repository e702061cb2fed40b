"""Start-up objects are frozen out of the cyclic collector, so full collections stay short under load."""

from __future__ import annotations

import gc

from spanscore.server.running import freeze_startup_objects


def test_objects_alive_after_start_up_are_frozen() -> None:
    gc.unfreeze()
    keep = [[index] for index in range(1000)]  # long-lived containers, as start-up leaves them
    try:
        freeze_startup_objects()
        assert gc.get_freeze_count() >= len(keep)
    finally:
        gc.unfreeze()
