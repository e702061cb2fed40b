"""Run assembly and sessions count what they hold in estimated bytes: every path that adds or forgets keeps the sum."""

from __future__ import annotations

from spanscore.records import SpanRecord
from spanscore.run import Run
from spanscore.runs.config import RunsConfig, SessionsConfig
from spanscore.runs.readiness import RunAssembler
from spanscore.runs.sessions import SessionTracker
from spanscore.runs.sizes import span_bytes

S = 1_000_000_000
KB = 1_000


def span(trace: int, index: int, text: int) -> SpanRecord:
    return SpanRecord(
        f"{trace:032x}", f"{index + 1:016x}", "", "agent", "Internal", index, index + 1, attributes={"x": "y" * text}
    )


def turn(session: str, index: int, text: int) -> Run:
    return Run("q" * text, "a" * text, run_id=f"{index:016x}", session_id=session, start_time_ns=index * S)


def test_a_trace_over_its_byte_cap_keeps_what_fits_and_says_too_large() -> None:
    assembler = RunAssembler(RunsConfig(max_run_bytes=100 * KB))
    assembler.add_spans([span(1, i, 30 * KB) for i in range(5)], 0)
    stats = assembler.stats
    assert (stats.pending_spans, stats.too_large_traces, stats.too_large_records) == (3, 1, 2)
    assert stats.pending_bytes == sum(span_bytes(span(1, i, 30 * KB)) for i in range(3)) <= 100 * KB
    assembler.add_spans([span(1, 1, 30 * KB)], 1)  # a repeated span replaces its copy: no growth, no refusal
    assert (stats.pending_spans, stats.too_large_records) == (3, 2)


def test_pending_bytes_evict_the_oldest_trace_and_return_to_zero() -> None:
    assembler = RunAssembler(RunsConfig(max_pending_bytes=250 * KB, quiet_period_s=0, late_span_window_s=0))
    for trace in range(4):
        assembler.add_spans([span(trace, 0, 100 * KB)], trace)
    stats = assembler.stats
    assert stats.evicted_traces == 2 and stats.pending_bytes <= 250 * KB
    assert (stats.evicted_runs_early, stats.too_large_traces) == (2, 0)  # their roots had arrived: handed on whole
    assembler.poll_ready(10**15)  # every trace expires: nothing is held, and nothing is counted as held
    assert (stats.pending_traces, stats.pending_spans, stats.pending_bytes) == (0, 0, 0)


def test_a_session_over_its_byte_cap_keeps_its_latest_turns() -> None:
    tracker = SessionTracker(SessionsConfig(max_session_bytes=500 * KB, quiet_period_s=1))
    for index in range(8):
        tracker.add(turn("s", index, 100 * KB), index)
    assert tracker.stats.held_bytes <= 500 * KB and tracker.stats.held_turns == 2
    assert tracker.stats.turns_dropped == 6
    (ready,) = tracker.poll_ready(100 * S)
    assert [t.run_id for t in ready.run.turns or ()] == [f"{6:016x}", f"{7:016x}"]


def test_one_turn_over_the_session_cap_is_still_kept_and_the_total_bound_scores_sessions_early() -> None:
    tracker = SessionTracker(SessionsConfig(max_session_bytes=10 * KB, max_held_bytes=450 * KB, quiet_period_s=1))
    for session in range(4):
        tracker.add(turn(f"s{session}", session, 100 * KB), session)
    stats = tracker.stats
    assert stats.held_turns == 2 and stats.sessions_evicted == 2 and stats.held_bytes <= 450 * KB
    assert {ready.reason for ready in tracker.poll_ready(0)} == {"session_evicted"}
    tracker.release(lambda _: False)
    assert (stats.held_turns, stats.held_bytes) == (0, 0)
