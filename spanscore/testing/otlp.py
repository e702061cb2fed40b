"""OTLP senders for tests and benches: the OpenTelemetry SDK's own exporters, aimed at a loopback port."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter


def grpc_exporter(port: int, headers: dict[str, str] | None = None) -> GrpcSpanExporter:
    return GrpcSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True, headers=headers, timeout=10)


def export(exporter: SpanExporter, spans: list[ReadableSpan]) -> str:
    result = exporter.export(spans)
    exporter.shutdown()
    return result.name
