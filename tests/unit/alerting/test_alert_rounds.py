"""Alert rounds run one at a time: a round asked for while the loop's round runs waits for it.

Seen in CI (tests/e2e/test_alerts.py): the service's loop starts a round as it starts; a round the test asked for
right after inserting scores read them and returned, and then the loop's round, which had read the store
before the insert, finished and put its state (0 samples) back. Two rounds at once also means two reads and
two evaluations of one alert for one answer.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from spanscore.alerting.config import AlertConfig, AlertingConfig
from spanscore.alerting.evaluator import AlertEvaluator
from spanscore.alerting.notify import Notifier

SETTINGS = AlertingConfig(backoff_s=0.01)
ALERT = AlertConfig.model_validate(
    {"name": "drop", "scorer": "faithfulness", "aggregate": "mean", "window": "15m", "below": 0.7, "min_samples": 20}
)


async def test_a_round_asked_for_during_another_waits_for_it_and_reads_after_it() -> None:
    reads: list[int] = []
    first_reading, release = threading.Event(), threading.Event()

    def read(*_: Any) -> list[tuple[Any, ...]]:
        reads.append(len(reads))
        if len(reads) == 1:  # the loop's round: it read the store before the scores went in
            first_reading.set()
            release.wait(10)
            return []
        return [(0.1, 1.0, "fail")] * 10

    evaluator = AlertEvaluator([ALERT], SETTINGS, read, Notifier(SETTINGS))
    earlier = asyncio.create_task(evaluator.evaluate_all())
    assert await asyncio.to_thread(first_reading.wait, 10)
    asked = asyncio.create_task(evaluator.evaluate_all())
    await asyncio.sleep(0.3)  # long enough for the asked round to read and finish, were it not waiting
    release.set()
    await earlier
    [state] = await asked
    assert state.samples == 10 and state.status == "insufficient_data"
    assert evaluator.states["drop"].samples == 10  # not put back to the earlier round's 0
