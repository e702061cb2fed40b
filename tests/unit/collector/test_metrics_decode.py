"""Metric points that no reader could use are refused one by one, named, and the rest kept (#39 item 3)."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2

from spanscore.collector.limits import LimitCounters, Limiter, LimitsConfig
from spanscore.collector.metrics_decode import check_point_count, metrics_from_request
from spanscore.errors import PayloadTooLargeError

NOW = 1_700_000_000 * 10**9


def _request(*metrics: metrics_pb2.Metric) -> ExportMetricsServiceRequest:
    request = ExportMetricsServiceRequest()
    group = request.resource_metrics.add()
    group.resource.attributes.append(KeyValue(key="service.name", value=AnyValue(string_value="svc")))
    group.scope_metrics.add().metrics.extend(metrics)
    return request


def _decode(*metrics: metrics_pb2.Metric, config: LimitsConfig | None = None) -> Any:
    return metrics_from_request(_request(*metrics), Limiter(config or LimitsConfig(), LimitCounters()))


def _histogram(**point: Any) -> metrics_pb2.Metric:
    metric = metrics_pb2.Metric(name="h")
    metric.histogram.data_points.add(time_unix_nano=NOW, **point)
    return metric


def _exponential(count: int, zero: int, positive: list[int]) -> metrics_pb2.Metric:
    metric = metrics_pb2.Metric(name="e")
    point = metric.exponential_histogram.data_points.add(time_unix_nano=NOW, count=count, zero_count=zero)
    point.positive.bucket_counts.extend(positive)
    return metric


def _summary(*quantiles: float) -> metrics_pb2.Metric:
    metric = metrics_pb2.Metric(name="s")
    point = metric.summary.data_points.add(time_unix_nano=NOW, count=1, sum=1.0)
    for q in quantiles:
        point.quantile_values.add(quantile=q, value=1.0)
    return metric


@pytest.mark.parametrize(
    ("metric", "reason"),
    [
        (_histogram(count=2, bucket_counts=[1, 1], explicit_bounds=[1.0, 2.0]), "2 explicit bounds need 3"),
        (_histogram(count=2, bucket_counts=[1, 1, 0], explicit_bounds=[2.0, 1.0]), "increase strictly"),
        (_histogram(count=5, bucket_counts=[1, 1, 0], explicit_bounds=[1.0, 2.0]), "add up to 2, not"),
        (_histogram(count=1, start_time_unix_nano=2**63), "start_time_unix_nano"),
        (_exponential(3, 2, [1, 1]), "more than the point's count 3"),
        (_summary(0.5, 1.5), "between 0 and 1"),
    ],
)
def test_unusable_points_are_refused_with_the_metric_named(metric: metrics_pb2.Metric, reason: str) -> None:
    good = _histogram(count=2, bucket_counts=[1, 1, 0], explicit_bounds=[1.0, 2.0])
    decoded = _decode(metric, good)
    assert decoded.rejected == 1
    assert f"metric {metric.name!r}" in decoded.error_message and reason in decoded.error_message
    assert [(p.kind, p.row["Count"]) for p in decoded.items] == [("histogram", 2)]


def test_attributes_nested_too_deep_refuse_their_point_only() -> None:
    deep = AnyValue(string_value="x")
    for _ in range(5):
        deep = AnyValue(array_value=ArrayValue(values=[deep]))
    metric = metrics_pb2.Metric(name="g")
    metric.gauge.data_points.add(time_unix_nano=NOW, as_int=1).attributes.append(KeyValue(key="k", value=deep))
    metric.gauge.data_points.add(time_unix_nano=NOW, as_double=2.0)
    decoded = _decode(metric, config=LimitsConfig(max_value_depth=3))
    assert decoded.rejected == 1 and "'k'" in decoded.error_message
    assert [p.row["Value"] for p in decoded.items] == [2.0]


def test_the_message_names_up_to_three_different_reasons() -> None:
    metrics = [_summary(2.0), _exponential(0, 1, []), _histogram(count=9, bucket_counts=[1]), _summary(-1.0)]
    decoded = _decode(*metrics)
    assert decoded.rejected == 4
    assert decoded.error_message.count("; ") == 2


def test_too_many_points_refuse_the_request() -> None:
    check_point_count(10, LimitsConfig(max_metric_points_per_request=10))
    with pytest.raises(PayloadTooLargeError, match="max_metric_points_per_request"):
        check_point_count(11, LimitsConfig(max_metric_points_per_request=10))
