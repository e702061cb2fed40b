"""Which sessions a restart or a new fleet owner takes up: a stored session decision settles one only when scored."""

from __future__ import annotations

import time

from spanscore.runs.assembly import assemble_runs
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.recovery import unscored_sessions
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import DecisionRow, ScoreRow, score_id
from tests.unit.runs.test_views import rag_run

SECOND = 10**9


def _turn(store: ClickHouseStore, at_ns: int) -> str:
    """One stored turn of session conv-1 at ``at_ns``; the session's id."""
    (assembled,) = assemble_runs(rag_run())
    row = ScoredRunRow.of(assembled.run)
    store.insert_scored_runs_sync([ScoredRunRow(**{**_fields(row), "timestamp_ns": at_ns})])
    assert assembled.run.session_id
    return assembled.run.session_id


def _fields(row: ScoredRunRow) -> dict[str, object]:
    return {name: getattr(row, name) for name in row.__dataclass_fields__}


def _decision(session: str, rule: str, outcome: str, at_ns: int) -> DecisionRow:
    return DecisionRow(at_ns, "", "", session, "svc", "agent", rule, outcome, 1.0, "", "quiet_period",
                       timestamp_ns=at_ns, target="session")  # fmt: skip


def _score(session: str, rule: str, at_ns: int) -> ScoreRow:
    return ScoreRow(
        run_timestamp_ns=at_ns,
        trace_id="",
        span_id="",
        run_id=session,
        service_name="svc",
        agent_name="agent",
        score_id=score_id(rule, "turn_count", "1", "", session),
        model="",
        session_id=session,
        user_id="",
        rule=rule,
        scorer="turn_count",
        scorer_version="1",
        score=1.0,
        label="",
        reason="",
        status="ok",
        error="",
        sample_rate=1.0,
        higher_is_better=True,
        judge_model="",
        input_tokens=0,
        output_tokens=0,
        cost_usd=0.0,
        duration_ms=1.0,
        ready_reason="quiet_period",
        run_duration_ms=1.0,
        run_error="",
        timestamp_ns=at_ns,
        target="session",
    )


def _open(store: ClickHouseStore, since_ns: int) -> list[str]:
    return [run.session_id or "" for run in unscored_sessions(store, since_ns)]


def test_a_session_sampled_after_its_last_turn_but_never_scored_is_open(store: ClickHouseStore) -> None:
    """Its scorer was killed in the judge call: the decision row is stored, the score never was. The session was
    taken as settled, so neither a restart nor the session's next fleet owner scored it."""
    now = time.time_ns()
    session = _turn(store, now - 10 * SECOND)
    store.insert_decisions_sync([_decision(session, "conversation", "sampled", now - 5 * SECOND)])
    assert _open(store, now - 60 * SECOND) == [session]
    store.insert_scores_sync([_score(session, "conversation", now - 4 * SECOND)])
    assert _open(store, now - 60 * SECOND) == []


def test_a_session_decided_without_a_draw_is_settled_and_a_later_turn_reopens_it(store: ClickHouseStore) -> None:
    now = time.time_ns()
    session = _turn(store, now - 10 * SECOND)
    store.insert_decisions_sync([_decision(session, "conversation", "not_sampled", now - 5 * SECOND)])
    assert _open(store, now - 60 * SECOND) == []
    _turn(store, now - 2 * SECOND)
    assert _open(store, now - 60 * SECOND) == [session]


def test_each_sampled_rule_needs_its_own_score(store: ClickHouseStore) -> None:
    now = time.time_ns()
    session = _turn(store, now - 10 * SECOND)
    store.insert_decisions_sync([
        _decision(session, "conversation", "sampled", now - 5 * SECOND),
        _decision(session, "judged_session", "sampled", now - 5 * SECOND),
    ])  # fmt: skip
    store.insert_scores_sync([_score(session, "conversation", now - 4 * SECOND)])
    assert _open(store, now - 60 * SECOND) == [session]
    store.insert_scores_sync([_score(session, "judged_session", now - 3 * SECOND)])
    assert _open(store, now - 60 * SECOND) == []


def test_a_session_with_no_decision_is_open(store: ClickHouseStore) -> None:
    now = time.time_ns()
    session = _turn(store, now - 10 * SECOND)
    assert _open(store, now - 60 * SECOND) == [session]
    assert _open(store, now - 5 * SECOND) == []  # its last turn is older than the window
