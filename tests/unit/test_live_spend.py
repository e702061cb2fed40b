"""The live loop feeds each rule's daily budget with what its scores cost, in dollars and in tokens."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from spanscore.collector.readiness import ReadyRun
from spanscore.live import LiveScoring, ScoringConfig, _RuleRun
from spanscore.model import Run
from spanscore.sampling.decisions import Outcome
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.base import ScoreResult, Status
from spanscore.scorers.workers import ScoringJob
from spanscore.storage.scores import DecisionRow, ScoreRow

TRACE_IDS = ["0af7651916cd43dd8448eb211c80319c", "1af7651916cd43dd8448eb211c80319c"]


class _RecordingStore:
    """Just the two inserts the live loop's writers call."""

    def __init__(self) -> None:
        self.scores: list[ScoreRow] = []
        self.decisions: list[DecisionRow] = []

    async def insert_scores(self, rows: Sequence[ScoreRow]) -> None:
        self.scores.extend(rows)

    async def insert_decisions(self, rows: Sequence[DecisionRow]) -> None:
        self.decisions.extend(rows)


@pytest.mark.parametrize(
    ("budget", "spent"),
    [({"daily_tokens": 1000}, {"input_tokens": 700, "output_tokens": 300}), ({"daily_usd": 0.5}, {"cost_usd": 0.5})],
)
async def test_a_scores_judge_spend_counts_against_its_rules_budget(
    budget: dict[str, float], spent: dict[str, Any]
) -> None:
    rule = RuleConfig.model_validate({"name": "judged", "scorers": ["completeness"], "budget": budget})
    live = LiveScoring(_RecordingStore(), [rule], scoring=ScoringConfig(recover_on_start=False))  # type: ignore[arg-type]
    first, second = (Run("question", "answer", trace_id=trace_id, span_id=trace_id[:16]) for trace_id in TRACE_IDS)
    await live.start()
    try:
        (decision,) = live.engine.decide(first)
        assert decision.sampled
        ready = ReadyRun(first, "quiet_period", "fingerprint")
        job = ScoringJob(rule.name, live.scorers[rule.name][0], first, context=_RuleRun(decision, ready, outstanding=1))
        # The result as a judge-backed scorer reports it: what its judge calls cost.
        await live._on_result(job, ScoreResult("completeness", "1", Status.OK, score=1.0, **spent))
        (after,) = live.engine.decide(second)
        assert (after.outcome, after.probability) == (Outcome.OVER_BUDGET, 0.0)
    finally:
        await live.shutdown()
