"""Decoded logs to the column lists that ClickHouse inserts take (spans go in as JSON, see ``clickhouse.py``).

Columnar batches avoid building one dict per row on the hot path: each column
is filled in one pass over the records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanscore.collector.model import LogRecord

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
