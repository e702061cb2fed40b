"""``/metrics``: the service's metrics dict in the Prometheus text format, written by prometheus_client.

The dict (``Service.metrics()``, keys from :mod:`spanscore.metric_keys`) also feeds ``/api/v1/status``;
here each key becomes a sample of a proper family: counters as counters (``_total``), gauges as
gauges, labels as labels, escaped by the library. What kind each metric is lives in one table,
``KINDS``; a key missing from it is still exposed, as ``unknown``, and a test keeps the table complete.
Scoring jobs are counted per state in one dict key each (``scoring_jobs_<state>``): the live states
(pending, running, retrying) are a gauge of jobs now in that state, the terminal ones a counter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Literal

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, UnknownMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from spanscore.metric_keys import parse_metric_key
from spanscore.scoring.workers import TERMINAL, JobState

PREFIX = "spanscore_"
Kind = Literal["counter", "gauge"]

KINDS: dict[str, tuple[Kind, str]] = {
    "spans_received": ("counter", "Spans received by the OTLP receivers."),
    "spans_rejected": ("counter", "Spans refused as invalid (partial success)."),
    "spans_stored": ("counter", "Spans inserted into storage."),
    "spans_refused_backpressure": ("counter", "Spans refused with a retry hint because storage was behind."),
    "spans_spooled": ("counter", "Spans written to the local spool."),
    "spans_replayed": ("counter", "Spans replayed from the spool into storage."),
    "spans_pending": ("gauge", "Spans waiting for storage now."),
    "storage_inserts": ("counter", "Span inserts into storage."),
    "storage_insert_failures": ("counter", "Span inserts that failed."),
    "logs_stored": ("counter", "Log records inserted into storage."),
    "metric_points_stored": ("counter", "OTLP metric data points inserted into storage (otel_metrics_* tables)."),
    "attribute_values_truncated": ("counter", "Attribute values cut to the configured length."),
    "attributes_dropped": ("counter", "Attributes dropped beyond the per-span, per-event or per-link limit."),
    "span_events_dropped": ("counter", "Span events dropped beyond collector.limits.max_events_per_span."),
    "span_links_dropped": ("counter", "Span links dropped beyond collector.limits.max_links_per_span."),
    "requests_refused_too_many_spans": ("counter", "Export requests refused for carrying too many spans."),
    "requests_refused_too_many_log_records": ("counter", "Export requests refused for carrying too many log records."),
    "scoring_queue_depth": ("gauge", "Scoring jobs waiting for a worker now."),
    "scoring_ready_waiting_runs": (
        "gauge",
        "Ready runs polled from run assembly and not yet decided: twice scoring.queue_size, plus one poll (what "
        "run assembly held when the line had room again).",
    ),
    "scoring_ready_waiting_bytes": (
        "gauge",
        "Estimated bytes of the traces those runs keep alive (the line waits for room past 128 MiB).",
    ),
    "scoring_write_retries": ("counter", "Score and decision writes retried because storage failed."),
    "scoring_code_timed_out": ("counter", "Code-scoring jobs cut at scoring.code_timeout_s (their worker was killed)."),
    "scoring_code_workers_lost": (
        "counter",
        "Code-scorer workers that died mid-job or were killed with a cancelled job.",
    ),
    "scoring_code_workers_started": ("counter", "Code-scorer worker processes started (replacements included)."),
    "rules_loaded": ("gauge", "Sampling rules loaded (the default rule counts when no rules are configured)."),
    "rules_generation": ("gauge", "Rule sets applied by this process: 1 at start, +1 per SIGHUP or PUT /api/v1/rules."),
    "rules_version": ("gauge", "1, labelled with the content hash of the rule set in use (RuleVersion on rows)."),
    "rules_reloads_failed": ("counter", "SIGHUP reloads refused (the running rules stayed); the log says why."),
    "rule_scorers": ("gauge", "Scorers in each loaded rule."),
    "fleet_keeper_connected": ("gauge", "1 while this replica has a Keeper session (fleet mode), else 0."),
    "fleet_joined": ("gauge", "1 while this replica is a member of the fleet (joined in Keeper), else 0."),
    "fleet_in_rotation": ("gauge", "1 while /readyz keeps this replica in rotation (member, or no peer has Keeper)."),
    "fleet_store_heartbeat_failing": ("gauge", "1 while fleet heartbeats have not reached the store for 3 beats."),
    "fleet_members": ("gauge", "Live replicas of the fleet as this replica last saw them."),
    "fleet_leader": ("gauge", "1 while this replica is the fleet's leader (it evaluates alerts)."),
    "fleet_session_losses": ("counter", "Keeper sessions this replica lost (it rejoins when Keeper answers)."),
    "fleet_membership_changes": ("counter", "Changes of the fleet's live members seen by this replica."),
    "fleet_rules_version": ("gauge", "The fleet rule set version (Keeper node version) applied here; -1 before any."),
    "fleet_rules_apply_failures": ("counter", "Fleet rule sets this replica refused to apply (the log says why)."),
    "fleet_rules_malformed": ("counter", "Published rules nodes refused: not a rule set (GET /api/v1/rules says why)."),
    "fleet_rules_replace_file": ("gauge", "1 when the fleet's rule set replaced this config file's rules here."),
    "fleet_session_turns_taken": ("counter", "Session turns other replicas stored, taken up by this owner."),
    "fleet_sessions_taken_over": ("counter", "Open sessions taken up from the store after the members changed."),
    "fleet_sessions_released": ("counter", "Sessions forgotten here because another replica owns them now."),
    "fleet_sync_failures": ("counter", "Steps of fleet rounds that failed, all steps (each is retried next round)."),
    "fleet_step_failures": ("counter", "Failures of each step of a fleet round (the log says why, once per cause)."),
    "fleet_budget_leases_taken": ("counter", "Leases of daily budgets this replica took from Keeper."),
    "fleet_other_fleets_in_store": ("gauge", "Other fleets whose replicas wrote heartbeats to this database lately."),
    "fleet_budget_burst_leases": ("counter", "Budget leases taken for a burst of ready runs, before deciding it."),
    "fleet_budget_local_share": ("gauge", "1 while budgets are on the local share (no Keeper; docs/deployment.md)."),
    "fleet_orphan_traces_taken": ("counter", "Traces a lost replica was assembling, taken up here to be scored."),
    "fleet_traces_recovered_at_join": (
        "counter",
        "Unhandled traces begun before this replica joined, taken up after the others' wait (start-up recovery).",
    ),
    "fleet_fence_live": ("gauge", "1 while this replica has proved its Keeper session live (its fence lease holds)."),
    "fleet_fence_refusals": ("counter", "Grants the fence refused: not live, outdated token, or no longer the owner."),
    "fleet_refused": ("gauge", "1 when this replica was refused at join (another live replica has its name)."),
    "fleet_sessions_fenced": ("counter", "Sessions not scored, or session scores not written, under a refused grant."),
    "fleet_sessions_reopened": ("counter", "Sessions refused a grant while still owned here (a lapse), opened again."),
    "fleet_runs_fenced": (
        "counter",
        "Ready runs not scored: while this replica could not prove its Keeper session, another had decided them.",
    ),
    "fleet_sessions_skipped_as_scored": ("counter", "Sessions not scored again: a recorded scoring covered all turns."),
    "fleet_handed_over_traces_taken": ("counter", "Traces a stopping replica handed over, taken up here at once."),
    "fleet_sessions_dropped_on_new_token": (
        "counter",
        "Sessions forgotten when a Keeper session was lost.",
    ),
    "fleet_runs_claimed_elsewhere": ("counter", "Ready runs left alone: another live replica claimed them, or scored."),
    "fleet_claim_races_lost": (
        "counter",
        "Runs claimed at the same time as another replica, left to the earlier claim after reading it back.",
    ),
    "fleet_claimed_runs_taken_up": ("counter", "Runs claimed by a replica that died without a score, taken up here."),
    "fleet_claim_failures": ("counter", "Scoring claims the store did not read or take (the runs went on unchecked)."),
    "scored_runs_dead_lettered": ("counter", "Scored-run views storage refused and moved to the dead letters."),
    "scored_runs_dead_letters_waiting": ("gauge", "Scored-run views in dead-letter files now, waiting for replay."),
    "scored_runs_salvaged_batches": ("counter", "Scored-run batches the engine refused, split to store what it takes."),
    "scored_runs_spooled": ("counter", "Scored-run views written to the local spool."),
    "backfill_done": ("gauge", "Runs the latest backfill has handled (scored or already scored)."),
    "backfill_total": ("gauge", "Runs the latest backfill found to handle."),
    "backfill_rate_runs_per_s": ("gauge", "Runs per second of the latest backfill."),
    "backfill_eta_s": ("gauge", "Seconds the latest backfill still needs at its rate."),
    "backfill_finished": ("gauge", "1 once the latest backfill has ended."),
    "backfill_cancelled": ("gauge", "1 when the latest backfill was cancelled."),
    "write_path_degraded": (
        "gauge",
        "1 while rows are dead-lettered or a writer has failed for storage.stuck_after_s.",
    ),
    "spans_handon_wait_seconds": (
        "counter",
        "Seconds stored spans waited for run assembly to take them (its queue full): storage was held back.",
    ),
    "logs_handon_wait_seconds": (
        "counter",
        "Seconds stored log records waited for run assembly to take them (its queue full).",
    ),
    "spans_dead_lettered": ("counter", "Spans storage refused and moved to the dead letters."),
    "spans_dead_letters_waiting": ("gauge", "Spans in dead-letter files now, waiting for replay."),
    "spans_salvaged_batches": ("counter", "Spans batches the engine refused, split to store what it takes."),
    "logs_dead_lettered": ("counter", "Logs storage refused and moved to the dead letters."),
    "logs_dead_letters_waiting": ("gauge", "Logs in dead-letter files now, waiting for replay."),
    "logs_salvaged_batches": ("counter", "Logs batches the engine refused, split to store what it takes."),
    "logs_spooled": ("counter", "Logs written to the local spool."),
    "metrics_dead_lettered": ("counter", "Metric points storage refused and moved to the dead letters."),
    "metrics_dead_letters_waiting": ("gauge", "Metric points in dead-letter files now, waiting for replay."),
    "metrics_salvaged_batches": ("counter", "Metric batches the engine refused, split to store what it takes."),
    "metrics_spooled": ("counter", "Metric points written to the local spool."),
    "scores_dead_lettered": ("counter", "Scores storage refused and moved to the dead letters."),
    "scores_dead_letters_waiting": ("gauge", "Scores in dead-letter files now, waiting for replay."),
    "scores_salvaged_batches": ("counter", "Scores batches the engine refused, split to store what it takes."),
    "scores_spooled": ("counter", "Scores written to the local spool."),
    "decisions_dead_lettered": ("counter", "Decisions storage refused and moved to the dead letters."),
    "decisions_dead_letters_waiting": ("gauge", "Decisions in dead-letter files now, waiting for replay."),
    "decisions_salvaged_batches": ("counter", "Decisions batches the engine refused, split to store what it takes."),
    "decisions_spooled": ("counter", "Decisions written to the local spool."),
    "feedback_dead_lettered": ("counter", "Outside scores storage refused and moved to the dead letters."),
    "feedback_dead_letters_waiting": ("gauge", "Outside scores in dead-letter files now, waiting for replay."),
    "feedback_salvaged_batches": ("counter", "Outside-score batches the engine refused, split to store what it takes."),
    "feedback_spooled": ("counter", "Outside scores written to the local spool."),
    "alert_evaluations": ("counter", "Alert evaluations run (one per alert per alerting.interval_s)."),
    "alert_evaluation_failures": ("counter", "Alert evaluations that could not read their scores."),
    "alert_notification_retries": ("counter", "Alert deliveries retried after a failed attempt."),
    "alert_firing": ("gauge", "1 while the alert fires (its interval lies beyond the threshold), else 0."),
    "alert_value": ("gauge", "The alert's aggregate at its latest evaluation."),
    "alert_samples": ("gauge", "Scores in the alert's window at its latest evaluation."),
    "alert_notifications_sent": ("counter", "Alert notifications delivered, per receiver channel."),
    "alert_notifications_failed": ("counter", "Alert notifications given up after every attempt, per channel."),
    "outside_scores_stored": ("counter", "Outside scores stored (POST /api/v1/scores and OTLP evaluation results)."),
    "outside_scores_pending": (
        "gauge",
        "Posted scores waiting for their trace (scores FINAL, at the resolver's last pass).",
    ),
    "outside_scores_never_resolved": ("gauge", "Posted scores whose trace never came while they were looked for."),
    "outside_scores_resolved_late": (
        "counter",
        "Posted scores whose span arrived after them, attached to it since start (docs/feedback.md).",
    ),
    "otlp_evaluations_received": ("counter", "gen_ai.evaluation.result events and log records read from OTLP."),
    "runs_pending_traces": ("gauge", "Traces being assembled into runs now."),
    "runs_evicted_traces": ("counter", "Traces evicted from assembly to bound memory."),
    "runs_evicted_early": (
        "counter",
        "Runs handed on whole before their quiet period ended, their trace evicted at a bound (root arrived).",
    ),
    "runs_pending_bytes": ("gauge", "Estimated bytes of the spans and logs held by run assembly."),
    "runs_evicted_waiting": (
        "gauge",
        "Runs of traces evicted at a bound, waiting for the next poll (past the ready line's bounds: shed).",
    ),
    "runs_evicted_waiting_bytes": ("gauge", "Estimated bytes those evicted runs keep alive."),
    "scoring_runs_shed": (
        "counter",
        "Runs decided without scoring because scoring was behind (evicted while the ready line was full, past its "
        "bounds): drawn as usual, a sampled draw decided too_large.",
    ),
    "runs_assembly_queued_records": (
        "gauge",
        "Stored spans and logs handed to run assembly's thread and not yet added (bounded; full holds the writer).",
    ),
    "runs_assembly_queued_bytes": (
        "gauge",
        "Estimated bytes of the spans and logs queued for run assembly's thread (bounded at 256 MiB).",
    ),
    "runs_too_large": (
        "counter",
        "Traces cut at collector.runs.max_run_bytes or evicted at a bound before ready (decision too_large).",
    ),
    "runs_too_large_records_dropped": ("counter", "Spans and logs dropped from traces over max_run_bytes."),
    "runs_ready": ("counter", "Runs that became ready to score."),
    "runs_recovered_traces": (
        "counter",
        "Traces read back from storage into run assembly: a restart's recovery, a lost fleet replica's traces.",
    ),
    "runs_recovery_skipped_traces": (
        "counter",
        "Undecided traces a restart or a fleet take-up listed and gave up after three failed reads of each (logged).",
    ),
    "runs_recovery_waiting_traces": (
        "gauge",
        "Undecided traces a restart found in storage that wait for room in run assembly (adopted in waves).",
    ),
    "spans_conflicting_ids_ignored": (
        "counter",
        "Spans ignored by run assembly: another service's span of the same trace holds their span id.",
    ),
    "sessions_open": ("gauge", "Open sessions held for target: session rules (not scored since their last run)."),
    "sessions_kept": ("gauge", "Scored sessions kept in memory (keep_scored_s) in case they continue."),
    "sessions_turns_held": ("gauge", "Turns held in memory over all sessions."),
    "sessions_bytes_held": ("gauge", "Estimated bytes of the turns held over all sessions."),
    "sessions_ready": ("counter", "Sessions that became ready to score for the first time."),
    "sessions_rescored": ("counter", "Sessions scored again because they continued after a scoring."),
    "sessions_evicted": ("counter", "Open sessions scored early to bound memory."),
    "sessions_continued_ignored": ("counter", "Runs of already scored sessions ignored under rescore: never."),
    "sessions_turns_dropped": ("counter", "Oldest turns dropped from sessions longer than max_turns."),
    "scores_written": ("counter", "Scores produced, by rule and status."),
    "ingest_redactions": ("counter", "Values masked in spans and logs at ingest (collector.redact), by detector."),
    "judge_redactions": ("counter", "Values masked in run text before a judge call, by rule and detector."),
    "scores_errors_held": (
        "gauge",
        "Scores whose latest version is an error now (scores FINAL, runs of the last 7 days); a backfill clears them.",
    ),
    "scores_errors_held_by_rule": ("gauge", "scores_errors_held per rule."),
    "scores_cost_unknown": ("counter", "Scores whose judge cost is unknown (litellm has no price for the model)."),
    "judge_failing_calls": ("gauge", "Failed calls of a judge model since its last answer, labelled with the cause."),
    "judge_failing_seconds": ("gauge", "Seconds since a failing judge model last answered (its first failure)."),
    "decisions_written": ("counter", "Sampling decisions recorded, by decision."),
    "scoring_jobs": ("gauge", "Scoring jobs now in each live state."),
    "scoring_jobs_ended": ("counter", "Scoring jobs that ended, by final state."),
}
_JOB_PREFIX = "scoring_jobs_"
_STATES = {state.value: state for state in JobState}


def exposition(metrics: Mapping[str, float]) -> tuple[bytes, str]:
    """The text exposition of ``metrics`` and its Content-Type."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(MetricsDictCollector(metrics))
    return generate_latest(registry), CONTENT_TYPE_LATEST


def split_key(key: str) -> tuple[str, dict[str, str]]:
    """A dict key as the family name (without prefix) and its labels."""
    name, labels = parse_metric_key(key)
    state = _STATES.get(name.removeprefix(_JOB_PREFIX)) if name.startswith(_JOB_PREFIX) else None
    if state is not None:
        return ("scoring_jobs_ended" if state in TERMINAL else "scoring_jobs"), {"state": state.value} | labels
    return name, labels


class MetricsDictCollector(Collector):
    """Maps one snapshot of the metrics dict to metric families, grouped by name."""

    def __init__(self, metrics: Mapping[str, float]) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[Metric]:
        grouped: dict[str, list[tuple[dict[str, str], float]]] = {}
        for key, value in sorted(self._metrics.items()):
            name, labels = split_key(key)
            grouped.setdefault(name, []).append((labels, float(value)))
        return list(_families(grouped))


def _families(grouped: Mapping[str, list[tuple[dict[str, str], float]]]) -> Iterator[Metric]:
    for name, samples in grouped.items():
        kind, documentation = KINDS.get(name, ("unknown", f"spanscore metric {name}."))
        label_names = sorted({label for labels, _ in samples for label in labels})
        family: CounterMetricFamily | GaugeMetricFamily | UnknownMetricFamily
        if kind == "counter":
            family = CounterMetricFamily(PREFIX + name, documentation, labels=label_names)
        elif kind == "gauge":
            family = GaugeMetricFamily(PREFIX + name, documentation, labels=label_names)
        else:
            family = UnknownMetricFamily(PREFIX + name, documentation, labels=label_names)
        for labels, value in samples:
            family.add_metric([labels.get(label, "") for label in label_names], value)
        yield family
