"""Decoded OTLP metric points, one row of one ``otel_metrics_*`` table each (migration 0016).

A point is kept as its table's kind and a dict of that table's columns, already in stored form (times in Unix
nanoseconds, attributes as the same text maps spans use, nested columns as parallel arrays). The five tables
differ in their columns, not in how they are written, so one record type, one spool codec and one insert path
serve all of them: a batch is split by kind and each part inserted column-wise into its table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

METRIC_TABLES = {
    "sum": "otel_metrics_sum",
    "gauge": "otel_metrics_gauge",
    "histogram": "otel_metrics_histogram",
    "exponential_histogram": "otel_metrics_exponential_histogram",
    "summary": "otel_metrics_summary",
}
"""The OTLP data kind (the ``Metric.data`` oneof's member name) and the table its points go to."""


@dataclass(frozen=True, slots=True)
class MetricPoint:
    """One data point: ``kind`` names its table (``METRIC_TABLES``), ``row`` holds that table's columns."""

    kind: str
    row: dict[str, Any]
    time_ns: int


def metric_points_to_json(points: Sequence[MetricPoint]) -> bytes:
    """The spool's form of a batch: one JSON array of ``[kind, time, row]``."""
    return orjson.dumps([[point.kind, point.time_ns, point.row] for point in points])


def metric_points_from_json(data: bytes) -> list[MetricPoint]:
    return [MetricPoint(kind, row, time_ns) for kind, time_ns, row in orjson.loads(data)]


def metric_columns(points: Sequence[MetricPoint]) -> list[tuple[str, list[str], list[list[Any]]]]:
    """``(table, column names, columns)`` for each kind in the batch, columns in the order of the names.

    Every row of one kind is built by the same decoder function, so the first row's keys name the columns.
    """
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for point in points:
        by_kind.setdefault(point.kind, []).append(point.row)
    found = []
    for kind, rows in by_kind.items():
        names = list(rows[0])
        found.append((METRIC_TABLES[kind], names, [[row[name] for row in rows] for name in names]))
    return found
