"""The live loop feeds each rule's daily budget with what its scores cost, in dollars and in tokens."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from spanscore.run import Run
from spanscore.sampling.decisions import Outcome
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.base import ScoreResult, Status
from spanscore.scoring.config import ScoringConfig
from spanscore.scoring.live import LiveScoring
from spanscore.scoring.subject import RuleRun, Subject
from spanscore.scoring.workers import ScoringJob
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.recovery import spend_since
from spanscore.storage.scores import DecisionRow, ScoreRow, score_id

TRACE_IDS = ["0af7651916cd43dd8448eb211c80319c", "1af7651916cd43dd8448eb211c80319c"]


class _RecordingStore:
    """Just the inserts the live loop's writers call."""

    def __init__(self) -> None:
        self.scores: list[ScoreRow] = []
        self.decisions: list[DecisionRow] = []
        self.scored_runs: list[object] = []

    async def insert_scores(self, rows: Sequence[ScoreRow]) -> None:
        self.scores.extend(rows)

    async def insert_decisions(self, rows: Sequence[DecisionRow]) -> None:
        self.decisions.extend(rows)

    async def insert_scored_runs(self, rows: Sequence[object]) -> None:
        self.scored_runs.extend(rows)


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
        ready = Subject(first, "quiet_period", "fingerprint")
        job = ScoringJob(rule.name, live.scorers[rule.name][0], first, context=RuleRun(decision, ready, outstanding=1))
        # The result as a judge-backed scorer reports it: what its judge calls cost.
        await live.dispatcher.on_result(job, ScoreResult("completeness", "1", Status.OK, score=1.0, **spent))
        (after,) = live.engine.decide(second)
        assert (after.outcome, after.probability) == (Outcome.OVER_BUDGET, 0.0)
    finally:
        await live.shutdown()


def _spend_row(
    index: int, rule: str, cost_usd: float | None, *, timestamp_ns: int, version_of: int | None = None
) -> ScoreRow:
    trace_id = f"{(version_of if version_of is not None else index) + 1:032x}"
    return ScoreRow(
        score_id=score_id(rule, "answer_relevancy", "1", trace_id, trace_id[:16]), run_timestamp_ns=timestamp_ns,
        trace_id=trace_id, span_id=trace_id[:16],
        run_id=trace_id, service_name="svc", agent_name="", model="", session_id="", user_id="", rule=rule,
        scorer="answer_relevancy", scorer_version="1", score=0.5, label="", reason="", status="ok", error="",
        sample_rate=1.0, higher_is_better=True, judge_model="m", input_tokens=600, output_tokens=0,
        cost_usd=cost_usd, duration_ms=1.0, ready_reason="quiet_period", run_duration_ms=1.0, run_error="",
        timestamp_ns=timestamp_ns,
    )  # fmt: skip


@pytest.mark.parametrize("budget", [{"daily_usd": 0.5}, {"daily_tokens": 1200}])
async def test_a_restart_goes_on_from_todays_recorded_spend(
    chdb_dsn: str, database_name: str, budget: dict[str, float]
) -> None:
    """Two scores today (0.25 USD, 600 tokens each, one of them written twice) spend the budget.

    Yesterday's spend and another rule's spend do not count; a rule without prior spend samples as configured.
    """
    store = ClickHouseStore(chdb_dsn, database_name)
    store.open()
    now = time.time_ns()
    yesterday = now - 86_400 * 10**9
    store.insert_scores_sync(
        [
            _spend_row(0, "judged", 0.25, timestamp_ns=now),
            _spend_row(1, "judged", 0.25, timestamp_ns=now),
            _spend_row(2, "judged", 0.25, timestamp_ns=now, version_of=1),  # the same score again (a retry)
            _spend_row(3, "judged", 100.0, timestamp_ns=yesterday),
            _spend_row(4, "other", 100.0, timestamp_ns=now),
        ]
    )
    rules = [
        RuleConfig.model_validate({"name": "judged", "scorers": ["completeness"], "budget": budget}),
        RuleConfig.model_validate({"name": "fresh", "scorers": ["completeness"], "budget": {"daily_usd": 0.5}}),
    ]
    live = LiveScoring(store, rules, scoring=ScoringConfig(recover_on_start=True))
    await live.start()
    try:
        judged, fresh = live.engine.decide(Run("question", "answer", trace_id=TRACE_IDS[0], span_id="a" * 16))
        assert (judged.outcome, judged.probability) == (Outcome.OVER_BUDGET, 0.0)
        assert fresh.sampled
    finally:
        await live.shutdown()
        store.close()


async def test_unpriced_scores_count_their_tokens_and_do_not_break_the_spend_read(
    chdb_dsn: str, database_name: str
) -> None:
    """A judge litellm cannot price stores CostUsd NULL (#40). Today's spend read, which a restart and every
    fleet replica's share sync run, summed that NULL into ``float(None)``: a fleet replica's sync round then
    failed at every member change, so it took no session or turn up again (the duplicates and short sessions
    of #36's pause, partition and rolling runs). Unpriced spend counts its tokens, and no dollars."""
    store = ClickHouseStore(chdb_dsn, database_name)
    store.open()
    now = time.time_ns()
    store.insert_scores_sync([_spend_row(index, "judged", None, timestamp_ns=now) for index in (0, 1)])
    try:
        assert spend_since(store, ["judged"], now - 10**9) == {"judged": (0.0, 1200, 2)}
        rule = RuleConfig.model_validate({"name": "judged", "scorers": ["completeness"],
                                          "budget": {"daily_tokens": 1200}})  # fmt: skip
        live = LiveScoring(store, [rule], scoring=ScoringConfig(recover_on_start=True))
        await live.start()
        try:
            (decision,) = live.engine.decide(Run("question", "answer", trace_id=TRACE_IDS[0], span_id="a" * 16))
            assert (decision.outcome, decision.probability) == (Outcome.OVER_BUDGET, 0.0)
        finally:
            await live.shutdown()
    finally:
        store.close()
