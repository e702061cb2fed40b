"""Agent traces for tests and benches: real OTel SDK spans in the GenAI semantic conventions.

Kept in the package (not tests/) so that ``python -m bench.fleet`` runs from a plain ``pip install -e .``.
"""

from __future__ import annotations

import json

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


SEARCH = {"description": "Search the shop's handbook.", "parameters": {"type": "object"}}


def rag_traces(
    count: int = 1, *, session: str | None = None, first: int = 0, numbered: bool = False
) -> list[ReadableSpan]:
    """Runs with two LLM calls, one tool call and one retrieval each (OTel GenAI conventions).

    ``numbered`` puts the run's number in its answer, so a judge that is sent the answer can tell runs apart.
    """
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    for index in range(first, first + count):
        question = f"When does the shop open on day {index}?"
        answer = f"The shop opens at 9 (run {index})." if numbered else "The shop opens at 9."
        with tracer.start_as_current_span("invoke_agent helper") as root:
            root.set_attributes(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "helper",
                    "gen_ai.input.messages": messages("user", question),
                    "gen_ai.output.messages": messages("assistant", answer),
                }
            )
            if session is not None:
                root.set_attribute("gen_ai.conversation.id", session)
            with tracer.start_as_current_span("chat gpt-4o") as call:
                call.set_attributes(
                    {
                        "gen_ai.operation.name": "chat",
                        "gen_ai.input.messages": messages("user", question),
                        "gen_ai.output.messages": messages("assistant", "I will search the opening hours."),
                        "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "search", **SEARCH}]),
                    }
                )
            with tracer.start_as_current_span("execute_tool search") as tool:
                tool.set_attributes(
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "search",
                        "gen_ai.tool.call.arguments": json.dumps({"q": "opening hours"}),
                        "gen_ai.tool.call.result": "The shop opens at 9.",
                    }
                )
            with tracer.start_as_current_span("retrieval docs") as retrieval:
                retrieval.set_attributes(
                    {
                        "gen_ai.operation.name": "retrieval",
                        "gen_ai.retrieval.documents": json.dumps(
                            [{"content": "The shop opens at 9 every day."}, {"content": "Free parking nearby."}]
                        ),
                    }
                )
            with tracer.start_as_current_span("chat gpt-4o") as call:
                call.set_attributes(
                    {
                        "gen_ai.operation.name": "chat",
                        "gen_ai.input.messages": messages("user", f"{question} Context: opens at 9."),
                        "gen_ai.output.messages": messages("assistant", answer),
                    }
                )
    provider.shutdown()
    return list(memory.get_finished_spans())
