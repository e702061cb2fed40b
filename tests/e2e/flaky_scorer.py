"""A scorer loaded by import path in tests: fails while ``UNREACHABLE`` is set, as a judge does during an outage."""

from __future__ import annotations

import threading

from spanscore.scorers import Scorer, StepContext, create_scorer

UNREACHABLE = threading.Event()


def flaky() -> Scorer:
    def generate_score(context: StepContext) -> float:
        if UNREACHABLE.is_set():
            raise ConnectionError("cannot connect to host 127.0.0.1:9 (judge outage)")
        return 1.0

    return create_scorer("flaky", requires=()).generate_score(generate_score)
