"""The CLI's backfill progress line, from the service's status figures (#40 items 3 and 5)."""

from __future__ import annotations

from spanscore.cli.backfill_client import progress_line

RUNNING = {
    "backfill_done": 5.0,
    "backfill_total": 8.0,
    "backfill_rate_runs_per_s": 1.3,
    "backfill_eta_s": 2.4,
    "backfill_finished": 0.0,
}


def test_the_line_shows_the_running_backfill_figures() -> None:
    assert progress_line(RUNNING) == "backfill 5/8 runs  1.3 runs/s  ETA 2s"


def test_an_eta_the_service_cannot_tell_yet_is_not_shown_as_0s() -> None:
    """Nothing scored yet: the service says -1 (no rate to divide by); "ETA 0s" read as nearly done."""
    line = progress_line({**RUNNING, "backfill_done": 3.0, "backfill_rate_runs_per_s": 0.0, "backfill_eta_s": -1.0})
    assert line == "backfill 3/8 runs  0.0 runs/s  ETA unknown"


def test_a_finished_backfill_prints_no_line() -> None:
    """A finished one is the previous backfill (or this one, whose result follows): never shown as progress."""
    assert progress_line({**RUNNING, "backfill_finished": 1.0}) is None
    assert progress_line({"spans_received": 1.0}) is None
