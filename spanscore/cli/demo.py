"""`spanscore demo`: realistic synthetic agent traces, so a newcomer sees scores arrive.

One conversation in four is a run that broke (a failed tool, an apology for an answer), so the
default rule's dashboard shows both colours. Each conversation is sent as a trace in one of three
dialects (OpenTelemetry GenAI, OpenInference, Vercel AI SDK), with a tool call and retrieved context,
through the stock OpenTelemetry SDK and OTLP/gRPC exporter, exactly as an
instrumented agent would send it. The runs are spread over the past hours (so
the dashboard's charts draw lines, not one column of dots), the SDK is flushed
in chunks so its queue never drops spans, and the report counts what the
service acknowledged, not what was handed to the SDK.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Span, Tracer

CHUNK = 100
"""Traces per flush: with four spans at most per trace, the SDK's queue never fills (it drops when full)."""


@dataclass(frozen=True, slots=True)
class Conversation:
    question: str
    tool: str
    arguments: dict[str, str]
    tool_result: str
    context: tuple[str, ...]
    answer: str


CONVERSATIONS = (
    Conversation(
        "What is the weather in Paris tomorrow?",
        "get_weather",
        {"city": "Paris"},
        '{"forecast": "light rain", "high_c": 14}',
        ("Paris forecasts come from the national weather service.",),
        "Tomorrow in Paris expect light rain with a high of 14 degrees Celsius.",
    ),
    Conversation(
        "How do I reset my password?",
        "search_docs",
        {"query": "reset password"},
        "Open Settings, choose Security, then Reset password; a link is emailed.",
        ("Password resets are done from Settings > Security.", "Reset links expire after 30 minutes."),
        "Go to Settings, then Security, and choose Reset password. We email you a link valid for 30 minutes.",
    ),
    Conversation(
        "Which plan includes SSO?",
        "search_docs",
        {"query": "SSO plan"},
        "Single sign-on is part of the Enterprise plan.",
        ("The Enterprise plan adds SSO and audit logs.",),
        "Single sign-on comes with the Enterprise plan, together with audit logs.",
    ),
    Conversation(  # a run that broke: the tool failed and the agent gave up, so the default rule has red to show
        "Why was I charged twice this month?",
        "get_invoices",
        {"month": "current"},
        '{"error": "billing service timed out"}',
        (),
        "I'm sorry, but I can't look up your invoices right now.",
    ),
)


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


@contextmanager
def _span(tracer: Tracer, name: str, start_ns: int, duration_ms: int) -> Iterator[Span]:
    """A span with explicit start and end times, so a run can lie in the past."""
    with tracer.start_as_current_span(name, start_time=start_ns, end_on_exit=False) as span:
        yield span
        span.end(end_time=start_ns + duration_ms * 1_000_000)


def _otel_genai(tracer: Tracer, c: Conversation, start_ns: int) -> None:
    with _span(tracer, "invoke_agent support", start_ns, 1800) as agent:
        agent.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "support",
                "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief and accurate."}]),
                "gen_ai.input.messages": _messages("user", c.question),
                "gen_ai.output.messages": _messages("assistant", c.answer),
                "gen_ai.request.model": "gpt-4o-mini",
            }
        )
        with _span(tracer, f"execute_tool {c.tool}", start_ns + 200_000_000, 400) as tool:
            tool.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": c.tool,
                    "gen_ai.tool.call.arguments": json.dumps(c.arguments),
                    "gen_ai.tool.call.result": c.tool_result,
                }
            )


def _openinference(tracer: Tracer, c: Conversation, start_ns: int) -> None:
    with _span(tracer, "support-agent", start_ns, 2100) as agent:
        agent.set_attributes({"openinference.span.kind": "AGENT", "input.value": c.question, "output.value": c.answer})
        with _span(tracer, "retrieve", start_ns + 100_000_000, 300) as retriever:
            retriever.set_attribute("openinference.span.kind", "RETRIEVER")
            for index, document in enumerate(c.context):
                retriever.set_attribute(f"retrieval.documents.{index}.document.content", document)
        with _span(tracer, c.tool, start_ns + 500_000_000, 400) as tool:
            tool.set_attributes(
                {
                    "openinference.span.kind": "TOOL",
                    "tool.name": c.tool,
                    "input.value": json.dumps(c.arguments),
                    "output.value": c.tool_result,
                }
            )


def _vercel_ai(tracer: Tracer, c: Conversation, start_ns: int) -> None:
    with _span(tracer, "ai.generateText", start_ns, 1500) as span:
        span.set_attributes(
            {
                "ai.operationId": "ai.generateText",
                "ai.prompt": json.dumps({"system": "Be brief and accurate.", "prompt": c.question}),
                "ai.response.text": c.answer,
                "ai.model.id": "gpt-4o-mini",
            }
        )
        with _span(tracer, "ai.toolCall", start_ns + 300_000_000, 350) as tool:
            tool.set_attributes(
                {
                    "ai.operationId": "ai.toolCall",
                    "ai.toolCall.name": c.tool,
                    "ai.toolCall.args": json.dumps(c.arguments),
                    "ai.toolCall.result": c.tool_result,
                }
            )


DIALECTS = {"otel_genai": _otel_genai, "openinference": _openinference, "vercel_ai": _vercel_ai}


@dataclass(slots=True)
class DemoReport:
    """What the demo handed to the SDK and what the service acknowledged."""

    traces: int = 0
    spans_created: int = 0
    spans_accepted: int = 0
    spans_refused: int = 0
    traces_accepted: int = 0
    """Traces whose every span the service acknowledged."""
    hours: float = 0.0


class _Tally(SpanProcessor):
    """Counts the spans each trace has, to tell whole traces from partly refused ones."""

    def __init__(self) -> None:
        self.created: Counter[int] = Counter()

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None:
            self.created[span.context.trace_id] += 1


class _CountingExporter(SpanExporter):
    """Wraps the OTLP exporter and counts the spans of exports the service answered OK."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.accepted: Counter[int] = Counter()
        self.refused = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.accepted.update(span.context.trace_id for span in spans if span.context is not None)
        else:
            self.refused += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def send_demo(
    endpoint: str, traces: int, *, seed: int = 7, headers: dict[str, str] | None = None, hours: float = 6.0
) -> DemoReport:
    """Send ``traces`` conversations round-robin over the dialects, spread evenly over the past ``hours``."""
    rng = random.Random(seed)
    provider = TracerProvider(resource=Resource.create({"service.name": "spanscore-demo"}))
    tally = _Tally()
    exporter = _CountingExporter(OTLPSpanExporter(endpoint=endpoint, insecure=True, headers=headers))
    provider.add_span_processor(tally)
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=8 * CHUNK, max_export_batch_size=512))
    tracer = provider.get_tracer("spanscore.cli.demo")
    names = list(DIALECTS)
    now = time.time_ns()
    span_ns = int(hours * 3600 * 1e9)
    for index in range(traces):
        offset = span_ns * (traces - index) // max(traces, 1) + rng.randrange(0, 60_000_000_000)
        DIALECTS[names[index % len(names)]](tracer, rng.choice(CONVERSATIONS), now - min(offset, span_ns))
        if (index + 1) % CHUNK == 0:
            provider.force_flush()
    provider.shutdown()
    whole = sum(1 for trace_id, count in tally.created.items() if exporter.accepted[trace_id] == count)
    return DemoReport(
        traces=traces,
        spans_created=sum(tally.created.values()),
        spans_accepted=sum(exporter.accepted.values()),
        spans_refused=exporter.refused,
        traces_accepted=whole,
        hours=hours,
    )
