"""OTLP metric export requests (protobuf or OTLP/JSON) to ``MetricPoint`` rows of the ``otel_metrics_*`` tables.

A point that no reader could use is refused on its own and counted for the OTLP partial success, with the
metric named: a number point with no value, a time outside what storage holds, a histogram whose bucket counts
do not fit its bounds or its count, a summary quantile outside [0, 1], attributes nested too deep. The rest of
the request is stored. Strings and attribute sets are bounded as for spans and logs (``collector.limits``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from spanscore.collector.bounds import Refused, time_problem
from spanscore.collector.decode import Decoded, attributes_to_dict, parse_request
from spanscore.collector.limits import Limiter, LimitsConfig
from spanscore.errors import PayloadTooLargeError
from spanscore.storage.metric_rows import MetricPoint

Row = dict[str, Any]
REASONS_SHOWN = 3


class _Refusals(Decoded[MetricPoint]):
    """Refused points' reasons: the first few different ones, so one message names every kind of fault seen."""

    def reject(self, count: int, message: str) -> None:
        self.rejected += count
        shown = self.error_message.split("; ") if self.error_message else []
        if message and message not in shown and len(shown) < REASONS_SHOWN:
            self.error_message = "; ".join([*shown, message])


def parse_metrics(body: bytes, *, json_body: bool) -> ExportMetricsServiceRequest:
    """Parse an OTLP metrics export request from protobuf or OTLP/JSON bytes."""
    return parse_request(body, ExportMetricsServiceRequest(), json_body=json_body)


def metrics_from_request(request: ExportMetricsServiceRequest, limiter: Limiter) -> Decoded[MetricPoint]:
    """Every storable point of the request, as rows; the others refused one by one with the reason."""
    out: Decoded[MetricPoint] = _Refusals([])
    depth = limiter.config.max_value_depth
    for group in request.resource_metrics:
        try:
            resource = limiter.shared(attributes_to_dict(group.resource.attributes, depth))
        except Refused as exc:
            out.reject(sum(_points(m) for s in group.scope_metrics for m in s.metrics), f"resource: {exc}")
            continue
        for scope_group in group.scope_metrics:
            scope = scope_group.scope
            try:
                scope_attributes = limiter.shared(attributes_to_dict(scope.attributes, depth))
            except Refused as exc:
                out.reject(sum(_points(m) for m in scope_group.metrics), f"scope: {exc}")
                continue
            common = {
                "ResourceAttributes": resource,
                "ResourceSchemaUrl": limiter.name(group.schema_url),
                "ScopeName": limiter.name(scope.name),
                "ScopeVersion": limiter.name(scope.version),
                "ScopeAttributes": scope_attributes,
                "ScopeDroppedAttrCount": scope.dropped_attributes_count,
                "ScopeSchemaUrl": limiter.name(scope_group.schema_url),
                "ServiceName": resource.get("service.name", ""),
            }
            for metric in scope_group.metrics:
                _metric(metric, common, limiter, out)
    return out


def check_point_count(count: int, limits: LimitsConfig) -> None:
    """Refuse a whole request (413 / RESOURCE_EXHAUSTED) that holds more points than allowed: nothing is stored."""
    if count > limits.max_metric_points_per_request:
        raise PayloadTooLargeError(
            f"request holds {count} metric data points; the limit is {limits.max_metric_points_per_request} "
            "per request (collector.limits.max_metric_points_per_request)"
        )


def _points(metric: Any) -> int:
    kind = metric.WhichOneof("data")
    return len(getattr(metric, kind).data_points) if kind else 0


def _metric(metric: Any, common: Row, limiter: Limiter, out: Decoded[MetricPoint]) -> None:
    kind = metric.WhichOneof("data")
    name = limiter.name(metric.name)
    if kind is None:
        return  # a metric with no data has no points to store or refuse
    data = getattr(metric, kind)
    head = {
        **common,
        "MetricName": name,
        "MetricDescription": limiter.text(metric.description, limiter.config.max_attribute_value_chars),
        "MetricUnit": limiter.name(metric.unit),
    }
    build = _BUILDERS[kind]
    for point in data.data_points:
        try:
            row = _point_head(point, head, limiter)
            row.update(build(point, data))
        except Refused as exc:
            out.reject(1, f"metric {name[:200]!r} ({kind} point): {exc}")
            continue
        out.items.append(MetricPoint(kind, row, point.time_unix_nano))


def _point_head(point: Any, head: Row, limiter: Limiter) -> Row:
    problem = time_problem("time_unix_nano", point.time_unix_nano)
    if not problem and point.start_time_unix_nano:
        problem = time_problem("start_time_unix_nano", point.start_time_unix_nano)
    if problem:
        raise Refused(problem)
    attributes = attributes_to_dict(point.attributes, limiter.config.max_value_depth)
    return {
        **head,
        "Attributes": limiter.attributes(attributes, limiter.config.max_attribute_value_chars),
        "StartTimeUnix": point.start_time_unix_nano,
        "TimeUnix": point.time_unix_nano,
        "Flags": point.flags,
    }


def _number(point: Any) -> float:
    which = point.WhichOneof("value")
    if which is None:
        raise Refused("the point has no value (set as_double or as_int)")
    return float(getattr(point, which))


def _exemplars(point: Any) -> Row:
    exemplars = point.exemplars
    return {
        "Exemplars.FilteredAttributes": [attributes_to_dict(e.filtered_attributes) for e in exemplars],
        "Exemplars.TimeUnix": [e.time_unix_nano for e in exemplars],
        "Exemplars.Value": [float(getattr(e, e.WhichOneof("value") or "as_double")) for e in exemplars],
        "Exemplars.SpanId": [e.span_id.hex() for e in exemplars],
        "Exemplars.TraceId": [e.trace_id.hex() for e in exemplars],
    }


def _gauge(point: Any, data: Any) -> Row:
    return {"Value": _number(point), **_exemplars(point)}


def _sum(point: Any, data: Any) -> Row:
    return {
        "Value": _number(point),
        **_exemplars(point),
        "AggregationTemporality": data.aggregation_temporality,
        "IsMonotonic": data.is_monotonic,
    }


def _histogram(point: Any, data: Any) -> Row:
    counts, bounds = list(point.bucket_counts), list(point.explicit_bounds)
    if counts and len(counts) != len(bounds) + 1:
        raise Refused(f"{len(bounds)} explicit bounds need {len(bounds) + 1} bucket counts, got {len(counts)}")
    if any(not low < high for low, high in zip(bounds, bounds[1:], strict=False)):
        raise Refused("explicit bounds must increase strictly")
    if counts and sum(counts) != point.count:
        raise Refused(f"bucket counts add up to {sum(counts)}, not the point's count {point.count}")
    return {
        "Count": point.count,
        "Sum": _optional(point, "sum"),
        "BucketCounts": counts,
        "ExplicitBounds": bounds,
        **_exemplars(point),
        "Min": _optional(point, "min"),
        "Max": _optional(point, "max"),
        "AggregationTemporality": data.aggregation_temporality,
    }


def _exponential_histogram(point: Any, data: Any) -> Row:
    positive, negative = list(point.positive.bucket_counts), list(point.negative.bucket_counts)
    counted = sum(positive) + sum(negative) + point.zero_count
    if counted > point.count:
        raise Refused(f"bucket and zero counts add up to {counted}, more than the point's count {point.count}")
    return {
        "Count": point.count,
        "Sum": _optional(point, "sum"),
        "Scale": point.scale,
        "ZeroCount": point.zero_count,
        "PositiveOffset": point.positive.offset,
        "PositiveBucketCounts": positive,
        "NegativeOffset": point.negative.offset,
        "NegativeBucketCounts": negative,
        **_exemplars(point),
        "Min": _optional(point, "min"),
        "Max": _optional(point, "max"),
        "AggregationTemporality": data.aggregation_temporality,
    }


def _summary(point: Any, data: Any) -> Row:
    quantiles = [q.quantile for q in point.quantile_values]
    if any(not 0.0 <= q <= 1.0 for q in quantiles):
        raise Refused("summary quantiles must lie between 0 and 1")
    return {
        "Count": point.count,
        "Sum": point.sum,
        "ValueAtQuantiles.Quantile": quantiles,
        "ValueAtQuantiles.Value": [q.value for q in point.quantile_values],
    }


def _optional(point: Any, field: str) -> float:
    """An optional double (sum, min, max): 0 when unset, as the exporter's tables store it."""
    return float(getattr(point, field)) if point.HasField(field) else 0.0


_BUILDERS: dict[str, Callable[[Any, Any], Row]] = {
    "gauge": _gauge,
    "sum": _sum,
    "histogram": _histogram,
    "exponential_histogram": _exponential_histogram,
    "summary": _summary,
}
