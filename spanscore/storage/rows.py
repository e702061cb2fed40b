"""Decoded spans and logs to the column lists that ClickHouse inserts take.

Columnar batches avoid building one dict per row on the hot path: each column
is filled in one pass over the records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanscore.collector.model import LogRecord, SpanRecord

SPAN_COLUMNS = (
    "Timestamp",
    "TraceId",
    "SpanId",
    "ParentSpanId",
    "TraceState",
    "SpanName",
    "SpanKind",
    "ServiceName",
    "ResourceAttributes",
    "ScopeName",
    "ScopeVersion",
    "SpanAttributes",
    "Duration",
    "StatusCode",
    "StatusMessage",
    "Events.Timestamp",
    "Events.Name",
    "Events.Attributes",
    "Links.TraceId",
    "Links.SpanId",
    "Links.TraceState",
    "Links.Attributes",
)

LOG_COLUMNS = (
    "Timestamp",
    "TraceId",
    "SpanId",
    "SeverityText",
    "SeverityNumber",
    "ServiceName",
    "Body",
    "ResourceAttributes",
    "ScopeName",
    "ScopeVersion",
    "LogAttributes",
    "EventName",
)


def span_columns(spans: Sequence[SpanRecord]) -> list[list[Any]]:
    """One list per entry of ``SPAN_COLUMNS``, in that order."""
    return [
        [s.start_time_ns for s in spans],
        [s.trace_id for s in spans],
        [s.span_id for s in spans],
        [s.parent_span_id for s in spans],
        [s.trace_state for s in spans],
        [s.name for s in spans],
        [s.kind for s in spans],
        [s.service_name for s in spans],
        [s.resource_attributes for s in spans],
        [s.scope_name for s in spans],
        [s.scope_version for s in spans],
        [s.attributes for s in spans],
        [s.duration_ns for s in spans],
        [s.status_code for s in spans],
        [s.status_message for s in spans],
        [[e.time_ns for e in s.events] for s in spans],
        [[e.name for e in s.events] for s in spans],
        [[e.attributes for e in s.events] for s in spans],
        [[link.trace_id for link in s.links] for s in spans],
        [[link.span_id for link in s.links] for s in spans],
        [[link.trace_state for link in s.links] for s in spans],
        [[link.attributes for link in s.links] for s in spans],
    ]


def log_columns(logs: Sequence[LogRecord]) -> list[list[Any]]:
    """One list per entry of ``LOG_COLUMNS``, in that order."""
    return [
        [r.time_ns for r in logs],
        [r.trace_id for r in logs],
        [r.span_id for r in logs],
        [r.severity_text for r in logs],
        [min(max(r.severity_number, 0), 255) for r in logs],
        [r.service_name for r in logs],
        [r.body for r in logs],
        [r.resource_attributes for r in logs],
        [r.scope_name for r in logs],
        [r.scope_version for r in logs],
        [r.attributes for r in logs],
        [r.event_name for r in logs],
    ]
