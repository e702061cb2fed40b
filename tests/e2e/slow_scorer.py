"""A custom scorer loaded by import path in tests: slow on its first call per process, to be cut mid-job."""

from __future__ import annotations

import threading
import time

from spanscore.scorers import create_scorer
from spanscore.scorers.base import StepContext

_first_call = threading.Event()


def _score(context: StepContext) -> float:
    if not _first_call.is_set():
        _first_call.set()
        time.sleep(3.0)  # the service is stopped while this runs
    return 0.5


slow = create_scorer("slow_once", description="test double").generate_score(_score)
