"""Vercel AI SDK telemetry (``experimental_telemetry``): the ``ai.*`` attributes.

``ai.generateText`` / ``ai.streamText`` spans carry ``ai.prompt`` (JSON with
``system`` and ``prompt`` or ``messages``), ``ai.response.text``,
``ai.response.toolCalls`` and the summed ``ai.usage.*``; the per-step
``.doGenerate`` / ``.doStream`` spans carry ``ai.prompt.messages``; tool runs
are ``ai.toolCall`` spans with ``ai.toolCall.name`` / ``.id`` / ``.args`` (or
``.input``) / ``.result`` (or ``.output``). Token counts are named
``promptTokens`` / ``completionTokens`` before AI SDK 5 and ``inputTokens`` /
``outputTokens`` after; both are read. Metadata set by the caller arrives as
``ai.telemetry.metadata.*`` (AI SDK 6 and earlier) or as runtime context,
``ai.settings.context.*`` (AI SDK 7). AI SDK 7's ``@ai-sdk/otel``
``OpenTelemetry`` integration writes GenAI attributes (``invoke_agent`` with
``gen_ai.agent.name`` = the function id), read by the GenAI extractor; only
the runtime context is left to this one. Its ``LegacyOpenTelemetry`` writes
the ``ai.*`` spans described here.
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
    load_json,
    non_empty,
    openai_tool_calls,
    provider_name,
    role_of,
    split_system,
    text_of,
    tool_result_text,
)
from spanscore.records import SpanRecord
from spanscore.run import Message, ToolCall

DIALECT = "vercel_ai"
_METADATA = "ai.telemetry.metadata."
_RUNTIME_CONTEXT = "ai.settings.context."
"""AI SDK 7 has no telemetry metadata: callers pass ``runtimeContext`` and opt keys in with
``includeRuntimeContext`` (and ``runtimeContext: true`` on ``@ai-sdk/otel``'s ``OpenTelemetry``)."""
_CALLER_KEYS = (
    ("session_id", ("sessionId", "session_id", "threadId", "conversationId")),
    ("user_id", ("userId", "user_id")),
    ("agent_name", ("agentName",)),
)
"""Run fields a caller sets as metadata or runtime context, by the key names seen in AI SDK examples."""
ATTRIBUTE_PREFIXES = ("ai.",)
"""A span is read as Vercel AI SDK telemetry when one of its attribute keys starts with one of these."""


def extract(span: SpanRecord) -> SpanFacts:
    attributes = span.attributes
    facts = SpanFacts()
    if not any(key.startswith(ATTRIBUTE_PREFIXES) for key in attributes):
        return facts
    get = attributes.get
    operation = get("ai.operationId") or span.name
    if get("ai.toolCall.name"):
        _tool(facts, attributes)
    elif operation.endswith((".doGenerate", ".doStream")) or "ai.prompt.messages" in attributes:
        facts.put("kind", "llm", f"{DIALECT}:ai.operationId")
    elif operation.startswith("ai."):
        facts.put("kind", "chain", f"{DIALECT}:ai.operationId")
    _prompt(facts, attributes)
    _response(facts, attributes)
    facts.put("finish_reason", finish.canonical(get("ai.response.finishReason")), f"{DIALECT}:ai.response.finishReason")
    facts.put("model", non_empty(get("ai.model.id")), f"{DIALECT}:ai.model.id")
    facts.put("provider", provider_name(get("ai.model.provider")), f"{DIALECT}:ai.model.provider")
    for key in ("ai.usage.inputTokens", "ai.usage.promptTokens"):
        facts.put("input_tokens", as_int(get(key)), f"{DIALECT}:{key}")
    for key in ("ai.usage.outputTokens", "ai.usage.completionTokens"):
        facts.put("output_tokens", as_int(get(key)), f"{DIALECT}:{key}")
    for field, keys in _CALLER_KEYS:
        for prefix in (_METADATA, _RUNTIME_CONTEXT):
            for key in keys:
                facts.put(field, non_empty(get(prefix + key)), f"{DIALECT}:{prefix}{key}")
    facts.put("agent_name", non_empty(get("ai.telemetry.functionId")), f"{DIALECT}:ai.telemetry.functionId")
    return facts


def _prompt(facts: SpanFacts, attributes: Mapping[str, str]) -> None:
    messages_value = load_json(attributes.get("ai.prompt.messages"))
    prompt = load_json(attributes.get("ai.prompt"))
    if isinstance(prompt, Mapping):
        if messages_value is None:
            messages_value = prompt.get("messages")
        if messages_value is None and isinstance(prompt.get("prompt"), str | list):
            messages_value = [{"role": "user", "content": prompt["prompt"]}]
        if isinstance(prompt.get("system"), str):
            facts.put("system", prompt["system"], f"{DIALECT}:ai.prompt")
    source = "ai.prompt.messages" if "ai.prompt.messages" in attributes else "ai.prompt"
    parsed = model_messages(messages_value, "user", facts.tool_results)
    if parsed is not None:
        rest, system = split_system(parsed)
        facts.put("input", rest, f"{DIALECT}:{source}")
        facts.put("system", system, f"{DIALECT}:{source}")


def _response(facts: SpanFacts, attributes: Mapping[str, str]) -> None:
    text = attributes.get("ai.response.text")
    calls = openai_tool_calls(load_json(attributes.get("ai.response.toolCalls")))
    if text is None and not calls:
        return
    source = "ai.response.text" if text is not None else "ai.response.toolCalls"
    facts.put("output", (Message("assistant", text or "", calls),), f"{DIALECT}:{source}")


def _tool(facts: SpanFacts, attributes: Mapping[str, str]) -> None:
    facts.put("kind", "tool", f"{DIALECT}:ai.toolCall.name")
    arguments = attributes.get("ai.toolCall.args", attributes.get("ai.toolCall.input"))
    result = attributes.get("ai.toolCall.result", attributes.get("ai.toolCall.output"))
    call = ToolCall(
        name=attributes["ai.toolCall.name"],
        arguments=arguments_of(arguments),
        result=tool_result_text(result),
        id=non_empty(attributes.get("ai.toolCall.id")),
    )
    facts.put("tool", call, f"{DIALECT}:ai.toolCall.name")


def model_messages(value: Any, default_role: str, tool_results: dict[str, str]) -> tuple[Message, ...] | None:
    """AI SDK messages: content is text or parts (``text``, ``tool-call``, ``tool-result``)."""
    if not isinstance(value, list):
        return None
    messages: list[Message] = []
    for item in value:
        if not isinstance(item, Mapping):
            continue
        role = role_of(item.get("role"), default_role)
        content = item.get("content")
        parts = content if isinstance(content, list) else []
        calls: list[ToolCall] = []
        texts = [content] if isinstance(content, str) else []
        for part in parts:
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind == "tool-call" and isinstance(part.get("toolName"), str):
                arguments = arguments_of(part.get("args", part.get("input")))
                calls.append(
                    ToolCall(part["toolName"], arguments, id=as_text(part.get("toolCallId")), order=len(calls))
                )
            elif kind == "tool-result":
                result = _tool_output(part.get("result", part.get("output")))
                tool_results[str(part.get("toolCallId"))] = result
                if role == "tool":  # a provider-executed tool's result in an assistant message is no answer text
                    texts.append(result)
            elif kind == "text":
                texts.append(text_of(part))
        messages.append(Message(role, "\n".join(texts), tuple(calls)))
    return tuple(messages)


def _tool_output(value: Any) -> str:
    """AI SDK 5 wraps tool outputs as ``{"type": "text" | "json", "value": ...}``."""
    if isinstance(value, Mapping) and value.get("type") in ("text", "json", "error-text", "error-json"):
        value = value.get("value")
    return as_text(value) or ""
