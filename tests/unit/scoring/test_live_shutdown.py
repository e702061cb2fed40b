"""A shutdown step that fails does not skip the ones after it (a second call returns at once: they would never run)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from spanscore.sampling.rules import RuleConfig
from spanscore.scoring.config import ScoringConfig
from spanscore.scoring.live import LiveScoring
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import DecisionRow, ScoreRow

RULE = RuleConfig.model_validate({"name": "everything", "scorers": ["completeness"]})


class _Rows:
    async def insert_scores(self, rows: Sequence[ScoreRow]) -> None:
        return None

    async def insert_decisions(self, rows: Sequence[DecisionRow]) -> None:
        return None

    async def insert_scored_runs(self, rows: Sequence[ScoredRunRow]) -> None:
        return None


async def test_a_failed_step_does_not_skip_the_flushes(caplog: pytest.LogCaptureFixture) -> None:
    live = LiveScoring(_Rows(), [RULE], scoring=ScoringConfig(recover_on_start=False))  # type: ignore[arg-type]
    await live.start()

    async def failing_stop(within_s: float | None = None) -> None:
        raise ValueError("a poller that failed to stop")

    stop = live.poller.stop
    live.poller.stop = failing_stop  # type: ignore[method-assign]
    try:
        await live.shutdown()
    finally:
        await stop()
    assert "stopping the ready poller failed" in caplog.text
    assert live.workers._tasks == [], "the scoring workers were left running"
    assert live.assembly._executor is None, "run assembly's thread was left running"
    assert all(writer._lanes[0]._task is None for writer in (live.score_writer, live.decision_writer))
