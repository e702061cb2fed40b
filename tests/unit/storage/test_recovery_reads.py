"""Runs read back from storage (restart recovery, backfill, preview) are the runs the live path assembles.

GenAI instrumentations that emit messages as log events put a run's input and output in ``otel_logs``; a
read-back that took only ``otel_traces`` would rebuild those runs without their conversation.
"""

from __future__ import annotations

import time
from dataclasses import replace

from spanscore.offline.backfill import stored_runs
from spanscore.runs.assembly import RunsConfig, assemble_runs
from spanscore.runs.recovery import StoredSpanSource
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import DecisionRow, ScoreRow
from tests.unit.collector.recorded_traces import load


def _recent() -> tuple[list, list]:  # type: ignore[type-arg]
    """The recorded GenAI-log-event trace, moved to now so a look-back window finds it."""
    spans, logs = load("otel_genai_logs")
    shift = time.time_ns() - min(span.start_time_ns for span in spans)
    spans = [replace(s, start_time_ns=s.start_time_ns + shift, end_time_ns=s.end_time_ns + shift) for s in spans]
    logs = [replace(record, time_ns=record.time_ns + shift) for record in logs]
    return spans, logs


def test_runs_read_back_carry_their_log_events(store: ClickHouseStore) -> None:
    spans, logs = _recent()
    assert logs and all(record.trace_id for record in logs)
    store.insert_spans_sync(spans)
    store.insert_logs_sync(logs)
    live = [item.run for item in assemble_runs(spans, logs, RunsConfig())]
    assert live and live[0].input_text  # the conversation lives in the log events

    (trace,) = StoredSpanSource(store).recent_traces(time.time_ns() - 3_600_000_000_000)
    assert sorted(trace.logs, key=lambda r: (r.time_ns, r.span_id, r.body)) == sorted(
        logs, key=lambda r: (r.time_ns, r.span_id, r.body)
    )
    assert stored_runs(store, 3600, RunsConfig()) == live


def test_logs_of_other_traces_stay_out(store: ClickHouseStore) -> None:
    spans, logs = _recent()
    store.insert_spans_sync(spans)
    store.insert_logs_sync([replace(record, trace_id="f" * 32) for record in logs])
    (trace,) = StoredSpanSource(store).recent_traces(time.time_ns() - 3_600_000_000_000)
    assert trace.logs == []


def test_the_latest_traces_are_read_back_first_and_a_limit_keeps_the_latest(store: ClickHouseStore) -> None:
    """After a restart the runs most likely left unhandled are the latest; ``DISTINCT ... LIMIT`` read any."""
    spans, _ = _recent()
    now = time.time_ns()
    for age_s, trace_id in ((300, "a" * 32), (30, "c" * 32), (120, "b" * 32)):
        shift = now - age_s * 1_000_000_000 - min(span.start_time_ns for span in spans)
        store.insert_spans_sync(
            [
                replace(s, trace_id=trace_id, start_time_ns=s.start_time_ns + shift, end_time_ns=s.end_time_ns + shift)
                for s in spans
            ]
        )
    since = now - 3_600_000_000_000
    assert [t.trace_id for t in StoredSpanSource(store).recent_traces(since)] == ["c" * 32, "b" * 32, "a" * 32]
    latest = list(StoredSpanSource(store, max_traces=2).recent_traces(since))
    assert [t.trace_id for t in latest] == ["c" * 32, "b" * 32] and all(len(t.spans) == len(spans) for t in latest)


def _stored_trace(store: ClickHouseStore, trace_id: str, age_s: float) -> None:
    spans, _ = _recent()
    shift = time.time_ns() - int(age_s * 1e9) - min(span.start_time_ns for span in spans)
    store.insert_spans_sync(
        [
            replace(s, trace_id=trace_id, start_time_ns=s.start_time_ns + shift, end_time_ns=s.end_time_ns + shift)
            for s in spans
        ]
    )


def _decision(trace_id: str, decision: str) -> DecisionRow:
    return DecisionRow(
        time.time_ns(), trace_id, "a1", f"run-{trace_id[:4]}", "svc", "agent", "r", decision, 1.0, "", ""
    )


def test_undecided_traces_are_the_ones_no_decision_score_or_session_turn_names(store: ClickHouseStore) -> None:
    """A crash under load leaves seconds of stored traces undecided, more than the first recovery holds: the later
    waves list them by what storage says was decided, not by what memory held."""
    ages = {"a": 50, "b": 40, "c": 30, "d": 20, "e": 10, "f": 5}
    for letter, age in ages.items():
        _stored_trace(store, letter * 32, age)
    store.insert_decisions_sync(
        [_decision("a" * 32, "filtered_out"), _decision("b" * 32, "sampled"), _decision("c" * 32, "sampled")]
    )
    score = ScoreRow(
        run_timestamp_ns=time.time_ns(), trace_id="c" * 32, span_id="a1", run_id="run-cccc", service_name="svc",
        agent_name="agent", score_id="s1", model="", session_id="", user_id="", rule="r", scorer="completeness",
        scorer_version="1", score=1.0, label="", reason="", status="ok", error="", sample_rate=1.0,
        higher_is_better=True, judge_model="", input_tokens=0, output_tokens=0, cost_usd=None, duration_ms=1.0,
        ready_reason="quiet_period", run_duration_ms=1.0, run_error="",
    )  # fmt: skip
    store.insert_scores_sync([score])
    turn = ScoredRunRow(time.time_ns(), "d" * 32, "run-dddd", "a1", "svc", "agent", "{}", session_id="chat-1")
    store.insert_scored_runs_sync([turn])
    since = time.time_ns() - 3_600_000_000_000
    # filtered out (a), scored (c) and a session turn (d) were decided; sampled with no score yet (b) was cut short
    assert StoredSpanSource(store).undecided_trace_ids(since) == ["f" * 32, "e" * 32, "b" * 32]
    assert StoredSpanSource(store, max_undecided=2).undecided_trace_ids(since) == ["f" * 32, "e" * 32]
    assert StoredSpanSource(store).undecided_trace_ids(time.time_ns() - 15_000_000_000) == ["f" * 32, "e" * 32]
    traces = StoredSpanSource(store).traces(["e" * 32, "0" * 32, "b" * 32])  # one with nothing stored is left out
    assert [trace.trace_id for trace in traces] == ["e" * 32, "b" * 32] and all(trace.spans for trace in traces)


def test_the_look_back_ends_at_the_latest_span_stored_not_at_the_restart(store: ClickHouseStore) -> None:
    """A restart 10 minutes after a crash looked back 6 minutes from now and found none of what the crash left."""
    now = time.time_ns()
    assert StoredSpanSource(store).latest_span_ns(now) == now  # nothing stored: from now
    _stored_trace(store, "a" * 32, 600)
    _stored_trace(store, "b" * 32, 700)
    latest = StoredSpanSource(store).latest_span_ns(now)
    assert now - 601 * 1_000_000_000 < latest < now - 599 * 1_000_000_000
    _stored_trace(store, "c" * 32, -3_600)  # a clock an hour ahead: never later than now
    assert StoredSpanSource(store).latest_span_ns(now) == now


def test_a_trace_with_a_run_begun_after_its_decisions_or_a_sampled_run_unscored_is_undecided(
    store: ClickHouseStore,
) -> None:
    """A hostile review found two holes in a listing that dropped every trace with any decision: a run begun after
    another of the same trace was decided (sequential agents, a human in the loop) was never taken up, and a sampled
    run of a chat was dropped by its session turn row, which the dispatcher writes before scoring."""
    now = time.time_ns()
    _stored_trace(store, "a" * 32, 10)  # its latest span began 10 s ago: after a decision written 30 s ago
    _stored_trace(store, "b" * 32, 40)  # before it: decided
    _stored_trace(store, "c" * 32, 20)  # sampled, its turn stored, its score never came
    early = [
        replace(_decision(trace_id, "filtered_out"), timestamp_ns=now - 30_000_000_000)
        for trace_id in ("a" * 32, "b" * 32)
    ]
    store.insert_decisions_sync([*early, _decision("c" * 32, "sampled")])
    turn = ScoredRunRow(now, "c" * 32, "run-cccc", "a1", "svc", "agent", "{}", session_id="chat-1")
    store.insert_scored_runs_sync([turn])
    assert StoredSpanSource(store).undecided_trace_ids(now - 3_600_000_000_000) == ["a" * 32, "c" * 32]
