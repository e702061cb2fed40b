"""In a fleet a session is scored under a grant, recorded with its turns, and its score checked where written.

The fence here is a stand-in whose answers the test sets; the real one (``spanscore.fleet.fence``) is exercised
against ZooKeeper in ``tests/e2e/test_fleet_fence.py``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import orjson

from spanscore.run import Run
from spanscore.runs.sessions import ReadySession
from spanscore.sampling.rules import RuleConfig
from spanscore.scoring.config import ScoringConfig
from spanscore.scoring.dispatcher import SessionDispatch
from spanscore.scoring.live import LiveScoring
from spanscore.storage.scored_runs import ScoredRunRow
from tests.unit.scoring.test_live_spend import _RecordingStore

RULE = RuleConfig.model_validate({"name": "conversation", "target": "session", "scorers": ["turn_count"]})


class _Fence:
    def __init__(
        self, *, grant: bool = True, still: bool = True, covered: frozenset[str] = frozenset(), newer: bool = False
    ) -> None:
        self._grant, self._still, self._covered, self._newer = grant, still, set(covered), newer

    def grant(self, session_id: str) -> object | None:
        return ("grant", session_id) if self._grant else None

    def still(self, grant: object) -> bool:
        return self._still

    def covered(self, session_ids: Sequence[str]) -> dict[str, set[str]]:
        return {session_id: self._covered for session_id in session_ids}

    def superseded(self, session_id: str, turns: set[str]) -> bool:
        return self._newer

    def claimant(self) -> dict[str, str]:
        return {"replica": "r0", "instance": "process-0"}

    def claim(self, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        CLAIMED.extend(keys)
        return set()


CLAIMED: list[tuple[str, str]] = []


async def _score_session(fence: _Fence) -> _RecordingStore:
    """One two-turn session through the session path of a live stage guarded by ``fence``."""
    store = _RecordingStore()
    live = LiveScoring(store, [RULE], scoring=ScoringConfig(recover_on_start=False))  # type: ignore[arg-type]
    live.dispatcher.fence = fence
    now = time.time_ns()
    for index in range(2):
        trace = f"{index:032x}"
        turn = Run("question", "answer", trace_id=trace, span_id=trace[:16], run_id=f"turn-{index}", session_id="s1")
        live.sessions.add(turn, now)
    (ready,) = live.sessions.poll_ready(now + 10**12)
    await live.start()
    try:
        await SessionDispatch(live.dispatcher, lambda _: {}).consume([ReadySession(ready.run, ready.reason, False)])
        await live.settle()
    finally:
        await live.shutdown()
    return store


def _records(store: _RecordingStore) -> list[list[str]]:
    rows = [row for row in store.scored_runs if isinstance(row, ScoredRunRow) and row.target == "session"]
    return [orjson.loads(row.run_json)["turns"] for row in rows]


async def test_a_granted_session_is_recorded_with_its_turns_then_scored() -> None:
    CLAIMED.clear()
    store = await _score_session(_Fence())
    assert _records(store) == [["turn-0", "turn-1"]]
    assert [row.score for row in store.scores] == [2.0]
    assert CLAIMED == [("", "s1")]  # the session's claim, before its scorers ran
    (record,) = [row for row in store.scored_runs if isinstance(row, ScoredRunRow) and row.target == "session"]
    assert orjson.loads(record.run_json)["instance"] == "process-0"  # the record counts while this process lives


async def test_a_session_scored_before_over_every_turn_is_not_scored_again() -> None:
    store = await _score_session(_Fence(covered=frozenset({"turn-0", "turn-1"})))
    assert (store.decisions, store.scores, _records(store)) == ([], [], [])


async def test_a_session_this_replica_cannot_prove_it_owns_is_left_to_its_owner() -> None:
    store = await _score_session(_Fence(grant=False))
    assert (store.decisions, store.scores, _records(store)) == ([], [], [])


async def test_an_outdated_score_is_refused_where_written_when_a_newer_scoring_covers_more() -> None:
    store = await _score_session(_Fence(still=False, newer=True))
    assert store.decisions and not store.scores


async def test_an_outdated_score_is_written_when_it_is_the_sessions_only_one() -> None:
    store = await _score_session(_Fence(still=False, newer=False))
    assert [row.score for row in store.scores] == [2.0]
