"""Mastra's OpenTelemetry exporters (``@mastra/otel-exporter``).

Both generations mark spans with ``mastra.span.type`` (``agent_run``,
``model_generation`` / ``llm_generation``, ``tool_call``, ``mcp_tool_call``,
``workflow_run`` ...). The current exporter writes GenAI attributes for model
and tool spans (read by the OpenTelemetry GenAI extractor) and keeps the agent
run's own input and output in ``mastra.agent_run.input`` / ``.output``; the
earlier one wrote ``input`` / ``output`` on every span, ``gen_ai.prompt`` /
``gen_ai.completion`` (whole JSON) on model spans, ``gen_ai.tool.input`` /
``.output`` on tool spans and ``agent.id`` on agent runs. Messages use the AI
SDK shapes, sometimes wrapped as ``{"format": 2, "parts": [...]}``.

The conversation is Mastra's memory thread: the current exporter writes its id
as ``gen_ai.conversation.id`` and, with the resource (the user), as
``mastra.metadata.threadId`` / ``resourceId``; tracing metadata a caller sets
(``tracingOptions.metadata``) arrives as ``mastra.metadata.*`` too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spanscore.collector.conventions import finish
from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.conventions.parsing import (
    arguments_of,
    as_int,
    as_text,
    json_or_text,
    non_empty,
    split_system,
    text_of,
)
from spanscore.collector.conventions.vercel_ai import model_messages
from spanscore.records import SpanRecord
from spanscore.run import Message, ToolCall

DIALECT = "mastra"
TYPE = "mastra.span.type"
ATTRIBUTE_PREFIXES = (TYPE,)
"""Only a span with a ``mastra.span.type`` attribute is read as Mastra; any other yields no facts."""
_KINDS = {
    "agent_run": "agent",
    "model_generation": "llm",
    "llm_generation": "llm",
    "tool_call": "tool",
    "mcp_tool_call": "tool",
    "workflow_run": "chain",
    "model_step": "step",
    "model_chunk": "chunk",
}


def extract(span: SpanRecord) -> SpanFacts:
    attributes = span.attributes
    facts = SpanFacts()
    span_type = (attributes.get(TYPE) or "").lower()
    if not span_type:
        return facts
    kind = _KINDS.get(span_type)
    facts.put("kind", kind, f"{DIALECT}:{TYPE}")
    get = attributes.get
    if kind == "agent":
        for key in ("gen_ai.agent.name", "agent.id", "gen_ai.agent.id"):
            facts.put("agent_name", non_empty(get(key)), f"{DIALECT}:{key}")
    if kind == "tool":
        _tool(facts, attributes, span)
    else:
        in_keys = (f"mastra.{span_type}.input", "gen_ai.prompt", "input")
        out_keys = (f"mastra.{span_type}.output", "gen_ai.completion", "output")
        for key in in_keys:
            _put_messages(facts, "input", get(key), "user", f"{DIALECT}:{key}")
        for key in out_keys:
            _put_messages(facts, "output", get(key), "assistant", f"{DIALECT}:{key}")
            facts.put("finish_reason", finish.from_response(get(key)), f"{DIALECT}:{key} finishReason")
    facts.put("provider", non_empty(get("gen_ai.system")), f"{DIALECT}:gen_ai.system")
    for key in ("mastra.metadata.threadId", "mastra.metadata.sessionId", "threadId"):
        facts.put("session_id", non_empty(get(key)), f"{DIALECT}:{key}")
    for key in ("mastra.metadata.userId", "mastra.metadata.resourceId", "resourceId"):
        facts.put("user_id", non_empty(get(key)), f"{DIALECT}:{key}")
    facts.put("input_tokens", as_int(get("gen_ai.usage.input_tokens")), f"{DIALECT}:gen_ai.usage.input_tokens")
    facts.put("output_tokens", as_int(get("gen_ai.usage.output_tokens")), f"{DIALECT}:gen_ai.usage.output_tokens")
    facts.put("error", non_empty(get("error.message")), f"{DIALECT}:error.message")
    return facts


def _put_messages(facts: SpanFacts, name: str, text: str | None, role: str, source: str) -> None:
    if text is None:
        return
    messages = mastra_messages(json_or_text(text), role, facts.tool_results)
    if messages is None:
        return
    rest, system = split_system(messages)
    facts.put(name, rest, source)
    facts.put("system", system, source)


def mastra_messages(value: Any, role: str, tool_results: dict[str, str]) -> tuple[Message, ...] | None:
    """A Mastra input or output: text, a list of strings or messages, or an object with text / messages."""
    if isinstance(value, str):
        return (Message(role, value),)
    if isinstance(value, Mapping):
        if isinstance(value.get("messages"), list):
            value = value["messages"]
        elif isinstance(value.get("text"), str):
            return (Message(role, value["text"]),)
        elif "role" in value:
            value = [value]
        else:
            return None
    if not isinstance(value, list):
        return None
    unwrapped: list[Any] = []
    for item in value:
        if isinstance(item, str):
            item = {"role": role, "content": item}
        if isinstance(item, Mapping) and isinstance(item.get("content"), Mapping):
            content = item["content"]
            parts = content.get("parts") if isinstance(content.get("parts"), list) else content.get("content")
            item = {**item, "content": parts if parts is not None else text_of(content)}
        unwrapped.append(item)
    return model_messages(unwrapped, role, tool_results)


def _tool(facts: SpanFacts, attributes: Mapping[str, str], span: SpanRecord) -> None:
    if attributes.get("gen_ai.tool.call.arguments") is not None:
        return  # the current exporter: the OpenTelemetry GenAI extractor reads it
    name = attributes.get("gen_ai.tool.name") or span.name.removeprefix("tool.execute ")
    arguments = attributes.get("gen_ai.tool.input", attributes.get("input"))
    result = json_or_text(attributes.get("gen_ai.tool.output", attributes.get("output")))
    call = ToolCall(
        name=name, arguments=arguments_of(arguments), result=as_text(result), id=attributes.get("toolCallId")
    )
    facts.put("tool", call, f"{DIALECT}:gen_ai.tool.input")
