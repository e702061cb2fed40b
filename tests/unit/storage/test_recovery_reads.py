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
