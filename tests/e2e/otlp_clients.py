"""Real OpenTelemetry SDK clients pointed at a running spanscore, for end-to-end tests."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from spanscore.testing.otlp import export, grpc_exporter

__all__ = ["export", "grpc_exporter", "http_exporter", "record_agent_trace"]


def http_exporter(port: int, headers: dict[str, str] | None = None) -> HttpSpanExporter:
    return HttpSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", headers=headers, timeout=10)


def record_agent_trace(service_name: str = "e2e-agent") -> list[ReadableSpan]:
    """Produce a small agent-shaped trace with every attribute value type, events, links and status."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name, "deployment.environment": "test"})
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("spanscore.tests", "1.2.3")
    with tracer.start_as_current_span("invoke_agent triage", kind=SpanKind.INTERNAL) as root:
        root.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "text": "héllo ✓",
                "count": 42,
                "ratio": 0.25,
                "flag": True,
                "strings": ["a", "b"],
                "ints": [1, 2, 3],
                "floats": [1.5, 2.5],
                "bools": [True, False],
            }
        )
        root.add_event("gen_ai.user.message", {"content": "What is the weather?"})
        link_context = root.get_span_context()
        with tracer.start_as_current_span(
            "execute_tool search", kind=SpanKind.CLIENT, links=[Link(link_context, {"link.kind": "caused_by"})]
        ) as child:
            child.set_attribute("gen_ai.tool.name", "search")
            child.set_status(Status(StatusCode.ERROR, "tool timed out"))
    provider.shutdown()
    return list(memory.get_finished_spans())
