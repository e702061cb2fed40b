"""`spanscore status` is a short summary: health, ingest, storage, scoring, rules, where to look next."""

from __future__ import annotations

from spanscore.cli.status_text import format_status

METRICS = {
    "spans_received": 1200.0, "spans_stored": 1180.0, "spans_pending": 20.0, "spans_rejected": 3.0,
    "spans_refused_backpressure": 0.0, "storage_inserts": 40.0, "storage_insert_failures": 0.0,
    "spans_spooled": 0.0, "spans_replayed": 0.0, "runs_ready": 300.0, "runs_pending_traces": 4.0,
    "scoring_queue_depth": 2.0, "sessions_open": 1.0, "rules_loaded": 2.0, "rules_generation": 3.0,
    'rules_version{version="abc123"}': 1.0, 'rule_scorers{rule="default"}': 1.0,
    'rule_scorers{rule="grounded"}': 2.0, "outside_scores_stored": 5.0, "outside_scores_resolved_late": 1.0,
    "otlp_evaluations_received": 0.0, "alert_evaluations": 9.0, 'alert_firing{alert="drop"}': 1.0,
    'alert_firing{alert="ok-one"}': 0.0, "write_path_degraded": 0.0,
}  # fmt: skip


def test_the_summary_is_short_and_says_what_matters() -> None:
    text = format_status(METRICS, "http://127.0.0.1:4319")
    lines = text.splitlines()
    assert len(lines) <= 10
    assert lines[0] == "spanscore at http://127.0.0.1:4319: healthy"
    assert "received 1,200, stored 1,180, waiting 20, rejected 3" in text
    assert "2 loaded, version abc123 (generation 3): default (1 scorer), grounded (2 scorers)" in text
    assert "firing: drop" in text and "ok-one" not in text
    assert lines[-1].startswith("every figure: spanscore status --format json")


def test_a_degraded_service_says_so_first_and_where_to_look() -> None:
    text = format_status({**METRICS, "write_path_degraded": 1.0}, "http://127.0.0.1:4319")
    assert text.splitlines()[0].startswith("spanscore at http://127.0.0.1:4319: degraded")
    assert "spanscore deadletter list" in text.splitlines()[0]


def test_no_rules_says_nothing_is_scored() -> None:
    bare = {key: value for key, value in METRICS.items() if not key.startswith("rule_scorers")}
    assert "none, so nothing is scored" in format_status({**bare, "rules_loaded": 0.0}, "http://x:1")


def test_scores_standing_in_an_error_are_counted_by_rule_with_how_to_score_them_again() -> None:
    """A judge outage leaves error scores that live scoring never revisits (#30 item 6): status must show them.

    The count is the store's present state (``scores_errors_held``, from scores FINAL), not the counter of
    errors ever written (#40 item 3): after a backfill repaired them, 8 errors written are 0 standing.
    """
    metrics = {
        **METRICS,
        'scores_written{rule="default",status="ok"}': 21.0,
        'scores_written{rule="judged",status="ok"}': 13.0,
        'scores_written{rule="judged",status="error"}': 8.0,
        "scores_errors_held": 8.0,
        'scores_errors_held_by_rule{rule="judged"}': 8.0,
    }
    text = format_status(metrics, "http://127.0.0.1:4319")
    assert len(text.splitlines()) <= 10
    assert "scores    since start: 42 written; 8 stand in an error now (judged 8)" in text, text
    assert "not retried live: spanscore backfill judged --since <outage>" in text
    repaired = {**metrics, "scores_errors_held": 0.0, 'scores_errors_held_by_rule{rule="judged"}': 0.0}
    assert "scores    since start: 42 written; none stands in an error" in format_status(repaired, "http://x:1")
    assert "not counted yet" in format_status({**METRICS}, "http://x:1")


def test_a_failing_judge_makes_the_service_degraded_with_its_cause_and_the_jobs_waiting() -> None:
    cause = "unreachable: connection refused to 127.0.0.1:9"
    metrics = {
        **METRICS,
        f'judge_failing_calls{{model="openai/judge",cause="{cause}"}}': 12.0,
        'judge_failing_seconds{model="openai/judge"}': 40.2,
        "scoring_jobs_retrying": 3.0,
    }
    first = format_status(metrics, "http://x:1").splitlines()[0]
    assert first == (
        f"spanscore at http://x:1: degraded: judge openai/judge {cause} (12 calls failing for 40 s; "
        "3 scoring jobs retrying)"
    )
    assert "jobs retrying 3" in format_status(metrics, "http://x:1")


def test_traces_kept_for_late_spans_are_not_called_assembling() -> None:
    """The gauge counts every trace in memory, also those whose runs were scored and wait only for late spans."""
    text = format_status(METRICS, "http://127.0.0.1:4319")
    assert "traces assembling" not in text and "traces in memory 4" in text


def test_a_fleet_replica_says_its_role_and_the_safe_mode_without_keeper() -> None:
    fleet = {"fleet_keeper_connected": 1.0, "fleet_members": 3.0, "fleet_leader": 1.0, "fleet_rules_version": 4.0}
    text = format_status({**METRICS, **fleet}, "http://127.0.0.1:4319")
    assert "fleet     3 replicas, this one leader (evaluates alerts), rules v4" in text
    cut_off = format_status({**METRICS, **fleet, "fleet_keeper_connected": 0.0}, "http://127.0.0.1:4319")
    assert "Keeper UNREACHABLE: degraded" in cut_off and "ingest goes on" in cut_off
    assert "fleet" not in format_status(METRICS, "http://127.0.0.1:4319").split("rules")[0]
