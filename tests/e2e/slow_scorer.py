"""A custom scorer loaded by import path in tests: slow on its first call per process, to be cut mid-job."""

from __future__ import annotations

import os
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


def _score_gated(context: StepContext) -> float:
    """Half a second per job while the file named by ``SPANSCORE_TEST_SLOW_WHILE`` exists (judges that are slow)."""
    gate = os.environ.get("SPANSCORE_TEST_SLOW_WHILE", "")
    if gate and os.path.exists(gate):
        time.sleep(0.5)
    return 0.5


gated = create_scorer("slow_while_gated", description="test double").generate_score(_score_gated)
