"""Where an outside score attaches: the scored span, or the trace's run root, as storage knows them.

A POSTed score names a trace and maybe a span. Without a span it attaches where spanscore's own score of that
trace would: the root span of the scored run (``scored_runs``) when the trace was scored, else the trace's
root span. The facts returned (start time, service, agent, session) are what the roll-ups group by.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

SpanFacts = tuple[str, int, str, str, str]
"""(span id, start time in ns, service name, agent name, session id)."""

_SPANS = """
SELECT TraceId, SpanId, ParentSpanId, toUnixTimestamp64Nano(Timestamp), ServiceName,
       SpanAttributes['gen_ai.agent.name'], SpanAttributes['session.id']
FROM otel_traces
WHERE TraceId IN {traces:Array(String)}
"""
_RUN_ROOTS = (
    "SELECT TraceId, argMax(SpanId, Version) FROM scored_runs WHERE TraceId IN {traces:Array(String)} GROUP BY TraceId"
)


class Queries(Protocol):
    def internal_query(self, sql: str, parameters: dict[str, object] | None = None) -> list[tuple[object, ...]]: ...


def scored_spans(store: Queries, wanted: Iterable[tuple[str, str | None]]) -> dict[tuple[str, str | None], SpanFacts]:
    """The facts of each wanted (trace, span) pair; a pair storage does not know is left out."""
    wanted = list(wanted)
    traces = sorted({trace for trace, _ in wanted})
    if not traces:
        return {}
    spans: dict[str, dict[str, tuple[str, SpanFacts]]] = {}
    for trace, span, parent, start, service, agent, session in store.internal_query(_SPANS, {"traces": traces}):
        facts = (str(span), int(start), str(service), str(agent), str(session))  # type: ignore[call-overload]
        spans.setdefault(str(trace), {})[str(span)] = (str(parent), facts)
    run_roots = {str(trace): str(span) for trace, span in store.internal_query(_RUN_ROOTS, {"traces": traces})}
    found: dict[tuple[str, str | None], SpanFacts] = {}
    for trace, span_id in wanted:
        members = spans.get(trace, {})
        chosen = span_id or run_roots.get(trace) or _trace_root(members)
        if chosen and chosen in members:
            found[trace, span_id] = members[chosen][1]
    return found


def _trace_root(members: dict[str, tuple[str, SpanFacts]]) -> str | None:
    roots = [facts for parent, facts in members.values() if not parent or parent not in members]
    return min(roots, key=lambda facts: facts[1])[0] if roots else None


_PENDING = """
SELECT ScoreId, Attributes['pending_span'], toUnixTimestamp64Nano(RunTimestamp) AS at
FROM scores FINAL
WHERE startsWith(Rule, 'source:') AND Attributes['pending_span'] != ''
  AND RunTimestamp >= fromUnixTimestamp64Nano({{since:Int64}})
  AND (at, ScoreId) > ({{after_ns:Int64}}, {{after_id:String}})
ORDER BY at {order}, ScoreId {order}
LIMIT {{limit:UInt32}}
"""

_EXPIRED = """
SELECT ScoreId, Attributes['pending_span'], toUnixTimestamp64Nano(RunTimestamp)
FROM scores FINAL
WHERE startsWith(Rule, 'source:') AND Attributes['pending_span'] != ''
  AND RunTimestamp < fromUnixTimestamp64Nano({before:Int64})
ORDER BY RunTimestamp
LIMIT {limit:UInt32}
"""

_PENDING_COUNT = """
SELECT countIf(Attributes['pending_span'] != ''), countIf(Attributes['never_resolved'] != '')
FROM scores FINAL
WHERE startsWith(Rule, 'source:')
"""

PendingScore = tuple[str, str, int]
"""A posted score still waiting for its span: (score id, the score as posted, posted at ns)."""


def pending_feedback(
    store: Queries, since_ns: int, limit: int, *, after: tuple[int, str] = (0, ""), newest_first: bool = False
) -> list[PendingScore]:
    """A page of posted scores still waiting for their span.

    Oldest first from the key ``after`` (posted at ns, score id): the resolver walks every pending score in
    pages from there; or the newest ``limit`` of them, whose traces are the likeliest to be arriving now.
    """
    parameters = {
        "since": since_ns,
        "limit": limit,
        "after_ns": after[0],
        "after_id": after[1],
    }
    rows = store.internal_query(_PENDING.format(order="DESC" if newest_first else "ASC"), parameters)
    return [(str(score_id), str(posted), int(at)) for score_id, posted, at in rows]  # type: ignore[call-overload]


def expired_feedback(store: Queries, before_ns: int, limit: int) -> list[PendingScore]:
    """Pending scores posted before ``before_ns``: their trace did not come while they were looked for."""
    rows = store.internal_query(_EXPIRED, {"before": before_ns, "limit": limit})
    return [(str(score_id), str(posted), int(at)) for score_id, posted, at in rows]  # type: ignore[call-overload]


def unresolved_counts(store: Queries) -> tuple[int, int]:
    """(still waiting for their trace, never resolved): the truth from ``scores FINAL``, for status and metrics."""
    [(pending, never)] = store.internal_query(_PENDING_COUNT, {})
    return int(pending), int(never)  # type: ignore[call-overload]
