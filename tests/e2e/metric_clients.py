"""Real OpenTelemetry SDK metrics, recorded by a MeterProvider and sent with the SDK's own OTLP exporters."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetricExporter
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricExporter,
    MetricsData,
)
from opentelemetry.sdk.metrics.view import ExponentialBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource

TOKENS = "gen_ai.client.token.usage"
DURATION = "gen_ai.client.operation.duration"


def metric_exporter(protocol: str, port: int, headers: dict[str, str] | None = None) -> MetricExporter:
    if protocol == "grpc":
        return GrpcMetricExporter(endpoint=f"127.0.0.1:{port}", insecure=True, headers=headers, timeout=10)
    return HttpMetricExporter(endpoint=f"http://127.0.0.1:{port}/v1/metrics", headers=headers, timeout=10)


class Recorder:
    """A MeterProvider whose points are collected on demand, delta or cumulative, for one service."""

    def __init__(self, service_name: str, delta: bool = False) -> None:
        temporality = AggregationTemporality.DELTA if delta else AggregationTemporality.CUMULATIVE
        self.reader = InMemoryMetricReader(preferred_temporality={Histogram: temporality})
        views = [View(instrument_name="latency.exp", aggregation=ExponentialBucketHistogramAggregation())]
        self.provider = MeterProvider(
            metric_readers=[self.reader],
            resource=Resource.create({"service.name": service_name}),
            views=views,
        )
        self.meter = self.provider.get_meter("spanscore.tests.metrics", "0.1")
        self.tokens = self.meter.create_histogram(TOKENS, unit="{token}", description="tokens used")
        self.duration = self.meter.create_histogram(DURATION, unit="s", description="operation duration")

    def call(self, model: str, input_tokens: int, output_tokens: int, seconds: float, agent: str = "") -> None:
        """One model call as the GenAI semantic conventions record it."""
        common = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": model}
        if agent:
            common["gen_ai.agent.name"] = agent
        self.tokens.record(input_tokens, {**common, "gen_ai.token.type": "input"})
        self.tokens.record(output_tokens, {**common, "gen_ai.token.type": "output"})
        self.duration.record(seconds, common)

    def collect(self) -> MetricsData:
        data = self.reader.get_metrics_data()
        assert data is not None
        return data


def every_kind(service_name: str) -> MetricsData:
    """One export holding a sum, an up-down sum, a gauge, a histogram and an exponential histogram."""
    recorder = Recorder(service_name)
    record_every_kind(recorder)
    return recorder.collect()


def record_every_kind(recorder: Recorder) -> None:
    """Record one point of every kind, and one GenAI model call, on ``recorder``."""
    meter = recorder.meter
    meter.create_counter("requests", unit="1", description="requests served").add(3, {"route": "/a"})
    meter.create_up_down_counter("queue.depth").add(-2)
    meter.create_gauge("temperature", unit="Cel").set(21.5, {"room": "lab"})
    exponential = meter.create_histogram("latency.exp", unit="ms")
    for value in (1.0, 2.0, 4.0, 1000.0):
        exponential.record(value)
    recorder.call("gpt-4o-mini", 10, 5, 0.25)


def send(exporter: MetricExporter, data: MetricsData) -> str:
    result = exporter.export(data)
    exporter.shutdown()
    return str(result.name)
