"""bench.stall_trace labels each probe with the large export's step, and bench.ack_modes renders its verdicts."""

from __future__ import annotations

from bench.ack_modes import render
from bench.stall_trace import Interval, PhaseLog


def timeline() -> PhaseLog:
    return PhaseLog(
        [
            Interval("json_to_protobuf", 1.0, 2.0, 8 << 20),
            Interval("json_to_protobuf", 1.5, 1.6, 300),  # a small body passing by: not the large export's
            Interval("decode", 2.0, 3.0, 3 << 20),
            Interval("wait_for_ack", 3.0, 4.0, 20_000),
            Interval("flush", 3.1, 3.9, 20_000),
            Interval("flush", 4.1, 4.2, 1),
            Interval("wait_for_ack", 4.05, 4.25, 1),
            Interval("gc2", 2.5, 2.6, 0),
        ]
    )


def test_probes_are_labelled_with_the_step_of_the_large_export_they_started_in() -> None:
    phases = timeline()
    assert [phases.phase_at(t) for t in (0.5, 1.55, 2.5, 3.5, 4.5)] == [
        "before",
        "json_to_protobuf",
        "decode",
        "wait_for_ack",
        "after",
    ]
    assert phases.overlapping(2.4, 3.2) == ["decode(1000ms)", "wait_for_ack(1000ms)", "flush(800ms)", "gc2(100ms)"]
    assert [round(ms) for ms in phases.small_flushes()] == [100]
    assert [round(ms) for ms in phases.small_waits()] == [200]


def test_ack_table_marks_each_run_against_the_50_ms_target() -> None:
    row = {
        "batch": 100,
        "acknowledge": "spooled",
        "load_average": "1.00 / 1.00 / 1.00",
        "sustained_spans_per_s": 1e4,
        "half_rate_spans_per_s": 5e3,
        "half_rate_requests": 300,
        "half_rate_p50_ms": 9.0,
        "stored_equals_acked": True,
    }
    runs = [{**row, "attempt": 1, "half_rate_p99_ms": 42.0}, {**row, "attempt": 2, "half_rate_p99_ms": 51.0}]
    runs.append({**row, "attempt": 1, "half_rate_p99_ms": 84.0, "code": "before", "sustained_spans_per_s": 5e3})
    text = render([{**run, "rules": "rule"} for run in runs], [], "")
    cells = "1.00 / 1.00 / 1.00 | 10,000 | 5,000 | 300 | 9.0"
    assert f"| 100 | spooled | rule | this | 1 | {cells} | 42.0 | meets | yes |" in text
    assert f"| 100 | spooled | rule | this | 2 | {cells} | 51.0 | misses | yes |" in text
    # the summary: min / median / max over the runs, and the median's ratio to the rows measured before
    assert "| 100 | spooled | rule | this | 2 | 10,000 / 10,000 / 10,000 | 42.0 / 46.5 / 51.0 | 2.00x | 0.55x |" in text
