"""Two replicas that claim one run at once: the later claim leaves it to the earlier one, and waits on it.

Checking and claiming are two statements, so two live replicas that both read "unclaimed" both claimed and both
judged (#36). The claim is now read back; ``tests/unit/storage/test_claim_race_store.py`` checks which claim is
the earlier one in a real store, and this file what the dispatcher does with the answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from spanscore.run import Run
from spanscore.sampling.rules import RuleConfig
from spanscore.scoring.claim_check import Taken
from spanscore.scoring.config import ScoringConfig
from spanscore.scoring.live import LiveScoring
from spanscore.scoring.subject import Subject
from tests.unit.scoring.test_live_spend import _RecordingStore

RULE = RuleConfig.model_validate({"name": "coded", "scorers": ["completeness"], "budget": {"daily_tokens": 1000}})
TRACE = "a" * 32


class _Fence:
    """A fleet member whose claims another replica always made first."""

    def __init__(self) -> None:
        self.claimed: list[tuple[str, str]] = []

    def grant(self, session_id: str) -> object | None:
        return None

    def still(self, grant: object) -> bool:
        return True

    def covered(self, session_ids: Sequence[str]) -> dict[str, set[str]]:
        return {}

    def superseded(self, session_id: str, turns: set[str]) -> bool:
        return False

    def runs_unproven(self) -> bool:
        return False

    async def make_room(self, runs: Sequence[Run]) -> None:
        return None

    def decided(self, trace_ids: Sequence[str]) -> dict[str, set[str]]:
        return {}

    def taken(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Taken]:
        return {}  # both replicas read "unclaimed"

    def owns_run(self, trace_id: str) -> bool:
        return True

    def claimant(self) -> dict[str, str]:
        return {"replica": "b", "instance": "b-1"}

    def claim(self, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        self.claimed.extend(keys)
        return set(keys)  # read back: another live replica's claim is the earlier one


async def _dispatch(rescore: bool) -> tuple[LiveScoring, _RecordingStore, _Fence]:
    store, fence = _RecordingStore(), _Fence()
    live = LiveScoring(store, [RULE], scoring=ScoringConfig(recover_on_start=False))  # type: ignore[arg-type]
    live.dispatcher.fence = fence
    run = Run("question", "answer", trace_id=TRACE, span_id=TRACE[:16], run_id="run-1")
    await live.start()
    try:
        await live.dispatcher.dispatch([(Subject(run, "quiet_period"), rescore)])
        await live.settle()
    finally:
        await live.shutdown()
    return live, store, fence


async def test_a_run_another_replica_claimed_first_is_not_scored_here_and_waits_on_that_replica() -> None:
    live, store, fence = await _dispatch(rescore=False)
    assert fence.claimed == [(TRACE, "run-1")]
    assert store.scores == []
    assert list(live.dispatcher.gate.claims.waiting) == [(TRACE, "run-1")]  # taken up if the other replica dies
    assert (live.dispatcher.gate.claims.raced, live.dispatcher.runs_in_flight) == (1, 0)
    assert live.engine._budgets["coded"].in_flight == 0  # the reservation made at the decision is released


async def test_a_rescore_decided_here_on_purpose_is_scored_whoever_claimed_the_run_first() -> None:
    live, store, _ = await _dispatch(rescore=True)
    assert [row.rule for row in store.scores] == ["coded"]
    assert live.dispatcher.gate.claims.raced == 0
