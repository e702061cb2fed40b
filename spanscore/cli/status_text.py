"""``spanscore status``: a short summary a person reads, not the metrics list (that is ``--format json``, /metrics).

The summary answers, in a few lines: is the service healthy, is ingest keeping up, is scoring keeping up,
which rules are in force, and where to look next. Every figure comes from ``GET /api/v1/status``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from spanscore.metric_keys import parse_metric_key

_LABELLED = re.compile(r'^(?P<name>\w+)\{(?P<key>\w+)="(?P<value>.*)"\}$')


def format_status(metrics: Mapping[str, float], url: str) -> str:
    """The summary of one service's status, answered by the API at ``url``."""
    value = {key: float(number) for key, number in metrics.items()}

    def n(key: str) -> str:
        return f"{value.get(key, 0):,.0f}"

    problems = _judge_problems(value)
    if value.get("write_path_degraded", 0) > 0:
        problems.append("rows are dead-lettered or a writer is stuck (spanscore deadletter list; /healthz)")
    if value.get("fleet_other_fleets_in_store", 0) > 0:
        problems.append("another fleet writes to this database: give each fleet its own (/healthz says which)")
    degraded = bool(problems)
    health = "degraded: " + "; ".join(problems) if problems else "healthy"
    if value.get("fleet_keeper_connected", 1) <= 0:
        health = (
            "degraded: Keeper unreachable (no leader or alerts here, "
            + (
                "budgets on the local share"
                if value.get("fleet_budget_local_share", 0) > 0
                else "budgets on leases held"
            )
            + ", rules frozen; /readyz)"
            + ("; also " + health if degraded else "")
        )
    elif value.get("fleet_joined", 1) <= 0:
        health = "degraded: not a member of the fleet (refused or still joining; /readyz and the log say why)" + (
            "; also " + health if degraded else ""
        )
    if value.get("fleet_store_heartbeat_failing", 0) > 0:
        health += "; fleet heartbeats do not reach the store (/healthz says why)"
    rules = _labelled(value, "rule_scorers", "rule")
    version = next(iter(_labelled(value, "rules_version", "version")), "?")
    rule_text = ", ".join(f"{name} ({count:g} scorer{'s' if count != 1 else ''})" for name, count in rules.items())
    firing = [name for name, state in _labelled(value, "alert_firing", "alert").items() if state > 0]
    lines = [
        f"spanscore at {url}: {health}",
        f"  spans     received {n('spans_received')}, stored {n('spans_stored')}, waiting {n('spans_pending')}, "
        f"rejected {n('spans_rejected')}, refused under backpressure {n('spans_refused_backpressure')}",
        f"  storage   inserts {n('storage_inserts')}, failed {n('storage_insert_failures')}, "
        f"spooled {n('spans_spooled')}, replayed {n('spans_replayed')}",
        f"  scoring   runs ready {n('runs_ready')}, traces in memory {n('runs_pending_traces')}, "
        f"queue {n('scoring_queue_depth')}, jobs retrying {n('scoring_jobs_retrying')}, "
        f"sessions open {n('sessions_open')}",
        _scores_line(value),
        f"  rules     {n('rules_loaded')} loaded, version {version} (generation {n('rules_generation')})"
        + (f": {rule_text}" if rule_text else ": none, so nothing is scored (add rules: to the config)"),
        f"  feedback  posted scores {n('outside_scores_stored')} (attached late {n('outside_scores_resolved_late')}, "
        f"waiting for their trace {n('outside_scores_pending')}, never resolved {n('outside_scores_never_resolved')}), "
        f"OTLP evaluations {n('otlp_evaluations_received')}",
    ]
    if "fleet_keeper_connected" in value:
        lines.append(_fleet_line(value))
    if value.get("fleet_rules_replace_file", 0) > 0:
        lines.append(
            "  WARNING   the fleet's published rules replaced this replica's config-file rules (its log says how)"
        )
    if firing or value.get("alert_evaluations"):
        lines.append(f"  alerts    firing: {', '.join(firing) if firing else 'none'}")
    lines.append("every figure: spanscore status --format json, or GET /metrics")
    return "\n".join(lines) + "\n"


def _judge_problems(value: Mapping[str, float]) -> list[str]:
    """One problem per judge model failing now, its cause in plain words, how long, and the jobs waiting on it."""
    calls: dict[str, tuple[str, float]] = {}
    seconds: dict[str, float] = {}
    for metric, number in value.items():
        if not metric.startswith("judge_failing_"):
            continue
        name, labels = parse_metric_key(metric)
        if name == "judge_failing_calls":
            calls[labels.get("model", "")] = (labels.get("cause", ""), number)
        elif name == "judge_failing_seconds":
            seconds[labels.get("model", "")] = number
    retrying = value.get("scoring_jobs_retrying", 0)
    waiting = f"; {retrying:,.0f} scoring jobs retrying" if retrying else ""
    return [
        f"judge {model} {cause or 'failing'} ({count:,.0f} calls failing for {seconds.get(model, 0):,.0f} s{waiting})"
        for model, (cause, count) in sorted(calls.items())
    ]


def _fleet_line(value: Mapping[str, float]) -> str:
    """Fleet mode: is Keeper reachable (else the documented safe mode), how many replicas, and who leads."""
    members = f"{value.get('fleet_members', 0):,.0f} replicas"
    rules = f"rules v{value.get('fleet_rules_version', -1):.0f}"
    if value["fleet_keeper_connected"] <= 0:
        budgets = (
            "judge budgets on the local share (1/fleet.expected_replicas of what was left)"
            if value.get("fleet_budget_local_share", 0) > 0
            else "judge budgets: leases held only"
        )
        return (
            f"  fleet     Keeper UNREACHABLE: degraded (last {members} kept as owners, no alerts evaluated here, "
            f"{budgets}, rule changes refused; ingest goes on), {rules}, {_rotation(value)}"
        )
    role = "leader (evaluates alerts)" if value.get("fleet_leader", 0) > 0 else "member"
    return (
        f"  fleet     {members}, this one {role}, {rules}, "
        f"sessions taken over {value.get('fleet_sessions_taken_over', 0):,.0f}"
    )


_SCORES = re.compile(r'^scores_written\{rule="(?P<rule>.*)",status="(?P<status>\w+)"\}$')


def _scores_line(value: Mapping[str, float]) -> str:
    """Scores written live since start, and the scores standing in an error now, by rule.

    The errors are the store's present state (``scores FINAL``, recounted in the background and after every
    backfill), not the counter of errors ever written: a backfill that scored them again clears them here.

    Live scoring never goes back to an error score (a judge outage leaves them behind), so the summary names
    the rules that hold them and the documented way to score them again (docs/judge.md, after a judge outage).
    """
    written = sum(number for metric, number in value.items() if _SCORES.match(metric))
    unpriced = sum(_labelled(value, "scores_cost_unknown", "rule").values())
    if unpriced:
        # The judge cost of these is unknown, not $0: litellm has no price for their judge model.
        written_text = f"{written:,.0f} written ({unpriced:,.0f} of unknown judge cost: no price for the model)"
    else:
        written_text = f"{written:,.0f} written"
    if "scores_errors_held" not in value:
        return f"  scores    since start: {written_text}; scores in an error: not counted yet"
    errors = _labelled(value, "scores_errors_held_by_rule", "rule")
    errors = {rule: count for rule, count in errors.items() if count}
    if not errors:
        return f"  scores    since start: {written_text}; none stands in an error"
    by_rule = ", ".join(f"{rule} {count:,.0f}" for rule, count in sorted(errors.items()))
    first = sorted(errors)[0]
    return (
        f"  scores    since start: {written_text}; {sum(errors.values()):,.0f} stand in an error now "
        f"({by_rule}); not retried live: spanscore backfill {first} --since <outage> scores them again"
    )


def _labelled(value: Mapping[str, float], name: str, key: str) -> dict[str, float]:
    found = {}
    for metric, number in value.items():
        match = _LABELLED.match(metric)
        if match and match["name"] == name and match["key"] == key:
            found[match["value"]] = number
    return found


def _rotation(value: Mapping[str, float]) -> str:
    """What /readyz does with a replica cut from Keeper: out when a peer has Keeper, else in (ingest goes on)."""
    if value.get("fleet_in_rotation", 1) > 0:
        return "in rotation (no other replica reported Keeper lately)"
    return "out of rotation (/readyz 503: other replicas have Keeper and take the spans)"
