"""The service's figures, as ``/metrics`` and ``/api/v1/status`` show them: one flat name -> value map.

Each stage keeps its own counters; this module only gathers them, so a new counter is added where it is
counted and named here once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spanscore.metric_keys import metric_key

if TYPE_CHECKING:
    from spanscore.server.service import Service


def service_metrics(service: Service) -> dict[str, float]:
    spans = service.span_writer.stats
    live = service.live.metrics() if service.live is not None else {}
    limits = service.ingest.limit_counters
    rules = service.config.rules
    rule_control = service.rule_control
    return (
        live
        | service.alerting.metrics()
        | service.operations.backfill_metrics()
        | service.held_errors.metrics()
        | (service.judge.health_metrics() if service.judge is not None else {})
        | (service.fleet.metrics() if service.fleet is not None else {})
        | {
            "spans_received": service.ingest.received_spans,
            "spans_rejected": service.ingest.rejected_spans,
            "spans_stored": spans.stored,
            "spans_refused_backpressure": spans.refused,
            "spans_spooled": spans.spooled,
            "spans_replayed": spans.replayed,
            "spans_pending": service.span_writer.pending,
            "storage_inserts": spans.inserts,
            "storage_insert_failures": spans.failed_inserts,
            "logs_stored": service.log_writer.stats.stored,
            "metric_points_stored": service.metric_writer.stats.stored,
            # Rows written, less the resolver's rewrites of rows already counted: scores received, once each.
            "outside_scores_stored": max(
                0,
                service.feedback_writer.stats.stored
                - service.feedback_resolver.resolved
                - service.feedback_resolver.expired,
            ),
            "outside_scores_resolved_late": service.feedback_resolver.resolved,
            "outside_scores_pending": service.feedback_resolver.pending,
            "outside_scores_never_resolved": service.feedback_resolver.never_resolved,
            "otlp_evaluations_received": service.span_tap.stored + service.log_tap.stored,
            "attribute_values_truncated": limits.truncated_values,
            "attributes_dropped": limits.dropped.attributes,
            "span_events_dropped": limits.dropped.events,
            "span_links_dropped": limits.dropped.links,
            "requests_refused_too_many_spans": limits.refused_requests,
            "requests_refused_too_many_log_records": limits.refused_log_requests,
            **write_path_metrics(service),
            "rules_loaded": len(rules),
            "rules_generation": rule_control.rule_set.generation,
            "rules_reloads_failed": rule_control.reloads_failed,
            metric_key("rules_version", version=rule_control.rule_set.version): 1,
        }
        | {metric_key("rule_scorers", rule=rule.name): len(rule.scorers) for rule in rules}
        | ingest_redaction_metrics(service)
    )


def ingest_redaction_metrics(service: Service) -> dict[str, float]:
    """``collector.redact``: values masked before storage, per detector (none without the option)."""
    redaction = service.ingest.redaction
    if redaction is None:
        return {}
    return {metric_key("ingest_redactions", detector=name): count for name, count in redaction.counts.items()}


def write_path_metrics(service: Service) -> dict[str, float]:
    out: dict[str, float] = {}
    for writer in service.writers():
        dead = writer.salvager.dead_letters
        out[f"{writer.name}_dead_lettered"] = writer.salvager.dead_lettered
        out[f"{writer.name}_dead_letters_waiting"] = dead.records if dead is not None else 0
        out[f"{writer.name}_salvaged_batches"] = writer.salvager.salvaged_batches
        out[f"{writer.name}_spooled"] = writer.stats.spooled
        if writer.inserter.hands_on:
            out[f"{writer.name}_handon_wait_seconds"] = round(writer.stats.handon_wait_seconds, 3)
    out["write_path_degraded"] = 1 if service.dead_letters.health() else 0
    return out
