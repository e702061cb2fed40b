"""`spanscore demo`: realistic synthetic agent traces, so a newcomer sees scores arrive.

Each conversation is sent as a trace in one of three dialects (OpenTelemetry
GenAI, OpenInference, Vercel AI SDK), with a tool call and retrieved context,
through the stock OpenTelemetry SDK and OTLP/gRPC exporter, exactly as an
instrumented agent would send it.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Tracer


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
)


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _otel_genai(tracer: Tracer, c: Conversation) -> None:
    with tracer.start_as_current_span("invoke_agent support") as agent:
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
        with tracer.start_as_current_span(f"execute_tool {c.tool}") as tool:
            tool.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": c.tool,
                    "gen_ai.tool.call.arguments": json.dumps(c.arguments),
                    "gen_ai.tool.call.result": c.tool_result,
                }
            )


def _openinference(tracer: Tracer, c: Conversation) -> None:
    with tracer.start_as_current_span("support-agent") as agent:
        agent.set_attributes({"openinference.span.kind": "AGENT", "input.value": c.question, "output.value": c.answer})
        with tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute("openinference.span.kind", "RETRIEVER")
            for index, document in enumerate(c.context):
                retriever.set_attribute(f"retrieval.documents.{index}.document.content", document)
        with tracer.start_as_current_span(c.tool) as tool:
            tool.set_attributes(
                {
                    "openinference.span.kind": "TOOL",
                    "tool.name": c.tool,
                    "input.value": json.dumps(c.arguments),
                    "output.value": c.tool_result,
                }
            )


def _vercel_ai(tracer: Tracer, c: Conversation) -> None:
    with tracer.start_as_current_span("ai.generateText") as span:
        span.set_attributes(
            {
                "ai.operationId": "ai.generateText",
                "ai.prompt": json.dumps({"system": "Be brief and accurate.", "prompt": c.question}),
                "ai.response.text": c.answer,
                "ai.model.id": "gpt-4o-mini",
            }
        )
        with tracer.start_as_current_span("ai.toolCall") as tool:
            tool.set_attributes(
                {
                    "ai.operationId": "ai.toolCall",
                    "ai.toolCall.name": c.tool,
                    "ai.toolCall.args": json.dumps(c.arguments),
                    "ai.toolCall.result": c.tool_result,
                }
            )


DIALECTS = {"otel_genai": _otel_genai, "openinference": _openinference, "vercel_ai": _vercel_ai}


def send_demo(endpoint: str, traces: int, *, seed: int = 7, headers: dict[str, str] | None = None) -> int:
    """Send ``traces`` conversations round-robin over the dialects; returns how many were sent."""
    rng = random.Random(seed)
    provider = TracerProvider(resource=Resource.create({"service.name": "spanscore-demo"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, insecure=True, headers=headers)))
    tracer = provider.get_tracer("spanscore.demo")
    names = list(DIALECTS)
    for index in range(traces):
        DIALECTS[names[index % len(names)]](tracer, rng.choice(CONVERSATIONS))
    provider.shutdown()
    return traces
