"""Long bound values reach the stand-in as a server gets them: in a form, not the URL (#36, fleet smoke).

clickhouse-connect sends a query's bound parameters as ``multipart/form-data`` once they are too long for a
URL (about 4 KB: some 115 trace ids). A stand-in that read that body as SQL answered "Syntax error" to every
such query, so a replica with many runs ready at once (a survivor after a kill) could neither dispatch them
nor run its fleet rounds, and ``bench.fleet``'s alert never resolved. A server reads the form; so must the
stand-in, or the bench measures the stand-in instead of the fleet.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from spanscore.run import Run
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.recovery import SESSION_TURN_KEYS_SQL, handled_runs, session_turns, settled_sessions
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.testing.clickhouse_standin import spawn, stop

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "clickhouse"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ClickHouseStore]:
    """The stand-in in a process of its own (its own engine, as the bench runs it), with the shipped owner user.

    In the test worker's own process the stand-in shares that worker's embedded engine with every earlier test
    of the worker, and once hung there for 300 s in a migration under a loaded CI run.
    """
    password = secrets.token_hex(12)
    users = tmp_path / "owner-user.sql"
    users.write_text((DEPLOY / "owner-user.sql").read_text().replace("'CHANGE-ME'", f"'{password}'"))
    process, port = spawn(str(tmp_path / "clickhouse"), str(users))
    opened = ClickHouseStore(f"clickhouse://spanscore_owner:{password}@127.0.0.1:{port}/", "forms")
    try:
        opened.open_schema()
        yield opened
    finally:
        opened.close()
        stop(process)


def test_a_query_whose_bound_values_travel_as_a_form_is_answered(store: ClickHouseStore) -> None:
    ids = [str(number) for number in range(0, 6000, 3)]  # about 10 KB of bound values
    sql = "SELECT count() FROM numbers(3000) WHERE toString(number) IN {ids:Array(String)}"
    assert store.internal_query(sql, {"ids": ids}) == [(1000,)]


def test_the_handled_runs_of_many_traces_are_read(store: ClickHouseStore) -> None:
    assert handled_runs(store, [f"{number:032x}" for number in range(500)]) == {}


def test_handled_runs_reads_more_trace_ids_than_a_server_takes_in_one_form_field(store: ClickHouseStore) -> None:
    """A survivor after a kill asks about every recent trace at once: past some 3,700 ids one bound array is
    longer than a server's ``http_max_field_value_size``, which refuses it. The ids are asked for in chunks."""
    ids = [f"{number:032x}" for number in range(9_000)]
    first, middle, last = ids[5], ids[4_500], ids[-1]
    database = store.database
    store.client.command(
        f"INSERT INTO {database}.score_decisions (TraceId, RunId, Rule, Decision) VALUES"
        f" ('{first}', 'a', 'judged', 'sampled'), ('{middle}', 'b', 'judged', 'sampled'),"
        f" ('{last}', 'c', 'judged', 'sampled')"
    )
    store.client.command(
        f"INSERT INTO {database}.scores (TraceId, RunId, Rule, ScoreId) VALUES ('{first}', 'a', 'judged', 'x'),"
        f" ('{last}', 'c', 'judged', 'y')"
    )
    found = handled_runs(store, ids)
    assert found == {first: {"a": True}, middle: {"b": False}, last: {"c": True}}


def test_a_stored_session_turn_is_handled_though_no_rule_decided_the_run(store: ClickHouseStore) -> None:
    """With only session rules no run has a decision of its own: a turn was handled once stored as a turn (its
    session is recovered from those rows). Recovery took it for new, and the session was scored a second time.
    A run decision, when there is one, still says whether the run needs more; a run stored with no session id
    is not a turn."""
    t1, t2, t3 = (f"{number:032x}" for number in (1, 2, 3))
    database = store.database
    store.client.command(
        f"INSERT INTO {database}.scored_runs (TraceId, RunId, Target, SessionId) VALUES"
        f" ('{t1}', 'turn', 'run', 'conv-1'), ('{t2}', 'judged-turn', 'run', 'conv-2'), ('{t3}', 'lone', 'run', '')"
    )
    store.client.command(
        f"INSERT INTO {database}.score_decisions (TraceId, RunId, Rule, Decision) VALUES"
        f" ('{t2}', 'judged-turn', 'judged', 'sampled')"
    )
    assert handled_runs(store, [t1, t2, t3]) == {t1: {"turn": True}, t2: {"judged-turn": False}}


def test_a_session_is_settled_by_its_score_or_a_decision_not_to_score_it(store: ClickHouseStore) -> None:
    """``rescore: never`` asks the store which sessions were settled; a sampled one without a score is not."""
    database = store.database
    store.client.command(
        f"INSERT INTO {database}.score_decisions (RunId, Rule, Decision, Target) VALUES"
        " ('scored', 'r', 'sampled', 'session'), ('skipped', 'r', 'filtered_out', 'session'),"
        " ('killed-mid-judge', 'r', 'sampled', 'session'), ('a-run', 'r', 'filtered_out', 'run')"
    )
    store.client.command(
        f"INSERT INTO {database}.scores (RunId, Rule, ScoreId, Target) VALUES ('scored', 'r', 'x', 'session')"
    )
    ids = ["scored", "skipped", "killed-mid-judge", "a-run", "unknown"]
    assert settled_sessions(store, ids) == {"scored", "skipped"}


def test_the_stored_turns_of_many_sessions_are_read_at_once_newest_within_the_limit(store: ClickHouseStore) -> None:
    """Every session new to memory reads its earlier turns back: one read per batch of sessions, each cut to its
    newest ``limit`` turns (``max_turns``) however old, oldest first, without the turns memory holds; a rewritten
    turn counts once (its newest row), also towards the limit."""
    second = 1_000_000_000
    start = 1_700_000_000 * second
    day = 86_400 * second

    def turn(session: str, index: int, answer: str = "", *, at: int | None = None) -> ScoredRunRow:
        started = start + index * second if at is None else at
        run = Run(f"q{index}", answer or f"a{index}", run_id=f"{session}-{index}", trace_id=f"{index + 1:032x}",
                  span_id=f"{index + 1:016x}", session_id=session, start_time_ns=started)  # fmt: skip
        return ScoredRunRow.of(run)

    rows = [turn("conv-a", index) for index in range(6)] + [turn("conv-b", index) for index in range(3)]
    rows.append(turn("conv-e", 0, at=start - 40 * day))  # weeks before its next turn: still the same session
    store.insert_scored_runs_sync(rows)
    store.insert_scored_runs_sync([turn("conv-a", 4, answer="a4 again"), turn("conv-a", 5, answer="a5 again")])
    sessions = ["conv-a", "conv-b", "conv-c", "conv-d", "conv-e"]
    held = {"conv-a": {"conv-a-5"}, "conv-d": {"conv-d-0"}, "conv-e": {"conv-e-1"}}
    found = session_turns(store, sessions, limit=4, held=held)
    assert sorted(found) == ["conv-a", "conv-b", "conv-e"]
    assert [(t.run_id, t.answer) for t in found["conv-a"]] == [
        ("conv-a-2", "a2"), ("conv-a-3", "a3"), ("conv-a-4", "a4 again")]  # fmt: skip
    assert [t.run_id for t in found["conv-b"]] == ["conv-b-0", "conv-b-1", "conv-b-2"]
    assert [t.run_id for t in found["conv-e"]] == ["conv-e-0"]
    assert session_turns(store, ["conv-b"], limit=4, held={"conv-b": {"conv-b-0", "conv-b-1", "conv-b-2"}}) == {}
    assert [t.run_id for t in session_turns(store, ["conv-a"], limit=1)["conv-a"]] == ["conv-a-5"]


def test_the_keys_of_session_turns_are_read_from_their_projection(store: ClickHouseStore) -> None:
    """scored_runs is sorted by trace: read by session id, every recent part was scanned (20 ms for 100
    sessions among 200,000 runs, growing with the table) once per poll that made sessions ready. The engine
    must answer from the projection sorted by session (0024), on the server path as on the embedded one."""
    turns = [Run("q", "a", run_id=f"r{n}", trace_id=f"{n + 1:032x}", session_id=f"conv-{n % 3}") for n in range(6)]
    store.insert_scored_runs_sync([ScoredRunRow.of(run) for run in turns])
    sql = "EXPLAIN indexes = 1 " + SESSION_TURN_KEYS_SQL.format(database=store.database)
    plan = "\n".join(str(row[0]) for row in store.internal_query(sql, {"ids": ["conv-a", "conv-b"], "limit": 5}))
    assert "(session_turn_keys)" in plan, plan  # ReadFromMergeTree or ReadFromPreparedSource of the projection
