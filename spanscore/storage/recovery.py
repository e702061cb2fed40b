"""Reading spans back for the run assembler after a restart (its ``SpanSource``).

Spans are acknowledged once stored, so after a crash the pending runs are in
``otel_traces``; ``score_decisions`` says which runs were already handed to
sampling. Trusted SQL with bound parameters only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from spanscore.collector.model import SpanEvent, SpanLink, SpanRecord
from spanscore.collector.readiness import RecoveredTrace

_SPAN_SELECT = """
SELECT TraceId, SpanId, ParentSpanId, SpanName, SpanKind, toUnixTimestamp64Nano(Timestamp), Duration,
       ServiceName, SpanAttributes, ResourceAttributes, StatusCode, StatusMessage, TraceState, ScopeName,
       ScopeVersion, arrayMap(t -> toUnixTimestamp64Nano(t), Events.Timestamp), Events.Name, Events.Attributes,
       Links.TraceId, Links.SpanId, Links.TraceState, Links.Attributes
FROM {database}.otel_traces
WHERE TraceId IN (
    SELECT DISTINCT TraceId FROM {database}.otel_traces WHERE Timestamp >= fromUnixTimestamp64Nano({since:Int64})
    LIMIT {limit:UInt32}
)
ORDER BY TraceId, Timestamp
"""


def span_from_row(row: tuple[Any, ...]) -> SpanRecord:
    """Rebuild the decoded span from an ``otel_traces`` row (the inverse of the ``otel_traces_intake`` view)."""
    (trace_id, span_id, parent, name, kind, start, duration, service, attributes, resource, code, message, state,
     scope_name, scope_version, event_times, event_names, event_attributes, link_traces, link_spans, link_states,
     link_attributes) = row  # fmt: skip
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=kind,
        start_time_ns=int(start),
        end_time_ns=int(start) + int(duration),
        service_name=service,
        attributes=dict(attributes),
        resource_attributes=dict(resource),
        status_code=code,
        status_message=message,
        trace_state=state,
        scope_name=scope_name,
        scope_version=scope_version,
        events=tuple(
            SpanEvent(int(t), str(n), dict(a))
            for t, n, a in zip(event_times, event_names, event_attributes, strict=False)
        ),
        links=tuple(
            SpanLink(t, s, st, dict(a))
            for t, s, st, a in zip(link_traces, link_spans, link_states, link_attributes, strict=False)
        ),
    )


class StoredSpanSource:
    """``SpanSource`` over a ClickHouse store (blocking; called once at start-up)."""

    def __init__(self, store: Any, *, max_traces: int = 10_000) -> None:
        self._store = store
        self._max_traces = max_traces

    def recent_traces(self, since_ns: int) -> Iterable[RecoveredTrace]:
        sql = _SPAN_SELECT.replace("{database}", self._store.database)
        rows = self._store.internal_query(sql, {"since": since_ns, "limit": self._max_traces})
        grouped: dict[str, list[SpanRecord]] = defaultdict(list)
        for row in rows:
            grouped[row[0]].append(span_from_row(row))
        return [RecoveredTrace(trace_id, spans) for trace_id, spans in grouped.items()]

    def handled_runs(self, trace_ids: Iterable[str]) -> Mapping[str, Mapping[str, str]]:
        """Runs that need nothing more: decided, and every rule that sampled them has a score row.

        A run whose ``sampled`` decision was written but whose scoring was cut short (a crash
        mid-job) is *not* handled, so recovery scores it again; deterministic score ids make the
        second attempt replace rather than duplicate anything the first one wrote.
        """
        ids = list(trace_ids)
        if not ids:
            return {}
        database = self._store.database
        rows = self._store.internal_query(
            "SELECT d.TraceId, d.RunId FROM ("
            f"  SELECT TraceId, RunId, groupArrayIf(Rule, Decision = 'sampled') AS SampledRules"
            f"  FROM {database}.score_decisions FINAL WHERE TraceId IN {{ids:Array(String)}}"
            "  GROUP BY TraceId, RunId"
            ") AS d LEFT JOIN ("
            f"  SELECT RunId, groupUniqArray(Rule) AS ScoredRules FROM {database}.scores"
            "  WHERE TraceId IN {ids:Array(String)} GROUP BY RunId"
            ") AS s ON d.RunId = s.RunId "
            "WHERE hasAll(s.ScoredRules, d.SampledRules)",
            {"ids": ids},
        )
        handled: dict[str, dict[str, str]] = defaultdict(dict)
        for trace_id, run_id in rows:
            handled[trace_id][run_id] = ""
        return handled
