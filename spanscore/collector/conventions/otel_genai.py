"""OpenTelemetry GenAI semantic conventions: ``gen_ai.*`` attributes, events and log events.

Reads the current JSON message attributes (``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.system_instructions``) on the span or on a
``gen_ai.client.inference.operation.details`` log record joined to it, the
tool and retrieval attributes, agent spans (``gen_ai.operation.name`` =
``invoke_agent``), and the older per-message events (``gen_ai.user.message``,
``gen_ai.choice`` ...) whether they were sent as span events or as log records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from spanscore.collector.conventions import converse, finish
from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.conventions.parsing import (
    arguments_of,
    as_int,
    as_text,
    chat_messages,
    function_response_content,
    json_or_text,
    load_json,
    non_empty,
    openai_tool_calls,
    provider_name,
    role_of,
    split_system,
    text_of,
    tool_call,
    tool_result_text,
)
from spanscore.records import LogRecord, SpanRecord
from spanscore.run import Message, ToolCall

DIALECT = "otel_genai"
ATTRIBUTE_PREFIXES = ("gen_ai.", "user.id", "enduser.id", "session.id", "error.type", "anthropic.message.stop_reason")
"""Every span attribute ``attribute_facts`` reads starts with one of these; a span with none yields no facts."""
EVENT_PREFIXES = ("gen_ai.",)
"""Every span event and log record name this module reads starts with one of these; others yield no facts."""
_KINDS = {
    "invoke_agent": "agent",
    # create_agent sets an agent up (LangGraph via OpenLLMetry emits it once per graph); it is not a run.
    "create_agent": "chain",
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "execute_tool": "tool",
    "retrieval": "retriever",
    "embeddings": "embedding",
    "invoke_workflow": "chain",
}
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_FINISH_KEYS = ("gen_ai.response.finish_reasons", "gen_ai.response.finish_reason", "anthropic.message.stop_reason")
"""The array the conventions define, the single value Semantic Kernel sends (``FinishReason.STOP``), and the
Anthropic SDK's own span attribute beside its ``gen_ai.*`` ones."""
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def attribute_facts(span: SpanRecord, logs: Sequence[LogRecord] = (), *, who: bool = False) -> SpanFacts:
    """Facts from ``gen_ai.*`` span attributes, then from the detail log records joined to the span.

    ``who``: without the messages (input, output, system instructions), the finish reason and the tool call,
    the parsing that is most of a span's cost; every other fact is read as in the full extraction.
    """
    facts = _from_attributes(span.attributes, "", who)
    for log in logs:
        if log.event_name == DETAILS_EVENT:
            facts.merge(_from_attributes(log.attributes, f"log {DETAILS_EVENT}:", who))
    return facts


def event_facts(span: SpanRecord, logs: Sequence[LogRecord] = ()) -> SpanFacts:
    """Facts from the older per-message events, as span events or as log records joined to the span."""
    return _from_events(span, logs)


def _from_attributes(attributes: Mapping[str, str], where: str, who: bool = False) -> SpanFacts:
    facts = SpanFacts()
    source = f"{DIALECT}:{where}"
    get = attributes.get
    facts.put("kind", _KINDS.get(get("gen_ai.operation.name") or ""), source + "gen_ai.operation.name")
    facts.put("agent_name", non_empty(get("gen_ai.agent.name")), source + "gen_ai.agent.name")
    if not who:
        _messages(facts, attributes, source)
    _tool(facts, attributes, source, who)
    facts.put(
        "documents", _documents(load_json(get("gen_ai.retrieval.documents"))), source + "gen_ai.retrieval.documents"
    )
    for key in ("gen_ai.request.model", "gen_ai.response.model"):
        facts.put("model", non_empty(get(key)), source + key)
    for key in ("gen_ai.provider.name", "gen_ai.system"):
        facts.put("provider", provider_name(get(key)), source + key)
    for key in ("gen_ai.conversation.id", "session.id"):
        facts.put("session_id", non_empty(get(key)), source + key)
    for key in ("user.id", "enduser.id"):
        facts.put("user_id", non_empty(get(key)), source + key)
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"):
        facts.put("input_tokens", as_int(get(key)), source + key)
    for key in ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"):
        facts.put("output_tokens", as_int(get(key)), source + key)
    facts.put("error", non_empty(get("error.type")), source + "error.type")
    return facts


def _messages(facts: SpanFacts, attributes: Mapping[str, str], source: str) -> None:
    """The input, output and system messages, the tool results among them, and the finish reason."""
    get = attributes.get
    parsed = parts_messages(load_json(get("gen_ai.input.messages")), "user")
    if parsed is not None:
        messages, facts.tool_results = parsed
        messages, system = split_system(messages)
        facts.put("input", messages, source + "gen_ai.input.messages")
        facts.put("system", system, source + "gen_ai.input.messages")
    output_json = load_json(get("gen_ai.output.messages"))
    output = parts_messages(output_json, "assistant")
    if output is not None:
        facts.put("output", output[0], source + "gen_ai.output.messages")
        for call_id, result in output[1].items():
            facts.tool_results.setdefault(call_id, result)
    if (reason := finish.from_attributes(attributes, _FINISH_KEYS)) is not None:
        facts.put("finish_reason", reason[0], source + reason[1])
    facts.put("finish_reason", finish.from_messages(output_json), source + "gen_ai.output.messages finish_reason")
    facts.put("system", _instructions(get("gen_ai.system_instructions")), source + "gen_ai.system_instructions")


def _tool(facts: SpanFacts, attributes: Mapping[str, str], source: str, who: bool = False) -> None:
    name = attributes.get("gen_ai.tool.name")
    if not name or facts.kind not in (None, "tool"):
        return
    facts.put("kind", "tool", source + "gen_ai.tool.name")
    if who:
        return
    call = tool_call(
        name,
        attributes.get("gen_ai.tool.call.arguments"),
        tool_result_text(attributes.get("gen_ai.tool.call.result")),
        non_empty(attributes.get("gen_ai.tool.call.id")),
    )
    facts.put("tool", call, source + "gen_ai.tool.name")


def _instructions(text: str | None) -> str | None:
    if not text:
        return None
    value = json_or_text(text)
    if isinstance(value, str):
        return value
    joined = text_of(value)
    return joined if joined else None


def _documents(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    documents = []
    for item in value:
        if isinstance(item, Mapping):
            item = item.get("content", item.get("text"))
        text = as_text(item)
        if text is not None:
            documents.append(text)
    return tuple(documents)


def parts_messages(value: Any, default_role: str) -> tuple[tuple[Message, ...], dict[str, str]] | None:
    """Messages in the GenAI ``parts`` shape (also accepts plain chat messages) and the tool results among them.

    A ``tool_call_response`` part is a tool's result, never text the speaker wrote: it is the content
    of a ``tool`` message, and inside any other message (AI SDK 7 reports an agent's answer as one
    assistant message with its text, its tool calls and their results) it only fills the result of
    the matching tool call. A result whose id names no call before it answers the oldest call still
    unanswered: the Google GenAI SDK sends function responses without the call's id, and its
    instrumentation makes one up (``NAME_INDEX``) that never equals the model's call id (#29).
    """
    if not isinstance(value, list):
        return None
    if not any(isinstance(item, Mapping) and "parts" in item for item in value):
        return chat_messages(value, default_role)
    messages: list[Message] = []
    results: dict[str, str] = {}
    unanswered: list[str] = []
    for item in value:
        if isinstance(item, Mapping):
            messages.append(_parts_message(item, default_role, results, unanswered))
    return tuple(messages), results


def _answered_id(response_id: str, unanswered: list[str]) -> str:
    """The call a result answers: its own id when a call so far has it, else the oldest unanswered call's."""
    if response_id in unanswered:
        unanswered.remove(response_id)
        return response_id
    return unanswered.pop(0) if unanswered else response_id


def _parts_message(
    item: Mapping[str, Any], default_role: str, results: dict[str, str], unanswered: list[str]
) -> Message:
    """One ``parts`` message; the tool results it carries are added to ``results`` by call id.

    ``unanswered`` holds, in order, the ids of the calls so far without a result (updated here).
    """
    role = role_of(item.get("role"), default_role)
    given = item.get("parts")
    parts: list[Any] = given if isinstance(given, list) else []
    texts: list[str] = []
    calls: list[ToolCall] = []
    answered: dict[str, str] = {}
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif kind == "tool_call" and isinstance(part.get("name"), str):
            arguments = arguments_of(part.get("arguments"))
            call_id = as_text(part.get("id"))
            calls.append(ToolCall(part["name"], arguments, id=call_id, order=len(calls)))
            if call_id is not None:
                unanswered.append(call_id)
        elif kind == "tool_call_response":
            result = as_text(function_response_content(part.get("response", part.get("result")))) or ""
            answered[_answered_id(str(part.get("id")), unanswered)] = result
            if role == "tool":
                texts.append(result)
    # LiteLLM's callback keeps the OpenAI fields beside the parts: the calls, and the id a tool message answers.
    for call in openai_tool_calls(item.get("tool_calls")):
        calls.append(replace(call, order=len(calls)))
        if call.id is not None:
            unanswered.append(call.id)
    if role == "tool" and item.get("tool_call_id") is not None and texts:
        answered[_answered_id(str(item["tool_call_id"]), unanswered)] = "\n".join(texts)
    results.update(answered)
    calls = [replace(call, result=answered.get(str(call.id), call.result)) for call in calls]
    return Message(role, "\n".join(texts), tuple(calls))


# --- the older per-message events -------------------------------------------------------------


def _event_bodies(span: SpanRecord, logs: Sequence[LogRecord]) -> list[tuple[str, Any]]:
    bodies: list[tuple[int, str, Any]] = []
    for event in span.events:
        body: Any = load_json(event.attributes.get("gen_ai.event.content"))
        if body is None:
            body = {key: json_or_text(value) for key, value in event.attributes.items()}
        bodies.append((event.time_ns, event.name, body))
    for log in logs:
        if log.event_name in _MESSAGE_EVENTS or log.event_name == "gen_ai.choice":
            bodies.append((log.time_ns, log.event_name, json_or_text(log.body)))
    bodies.sort(key=lambda item: item[0])
    return [(name, body) for _, name, body in bodies]


def _from_events(span: SpanRecord, logs: Sequence[LogRecord]) -> SpanFacts:
    facts = SpanFacts()
    inputs: list[Message] = []
    outputs: list[Message] = []
    source = f"{DIALECT}:events"
    for name, body in _event_bodies(span, logs):
        if name in ("gen_ai.content.prompt", "gen_ai.content.completion"):
            _legacy_content_event(facts, name, body)
            continue
        if not isinstance(body, Mapping):
            continue
        if name == "gen_ai.choice":
            nested = body.get("message")
            choice: Mapping[str, Any] = nested if isinstance(nested, Mapping) else body
            outputs.append(_event_message(choice, "assistant"))
            facts.put("finish_reason", finish.from_messages(body), source + " gen_ai.choice finish_reason")
        elif name in _MESSAGE_EVENTS:
            message = _event_message(body, _MESSAGE_EVENTS[name])
            if message.role == "tool" and body.get("id") is not None and message.content:
                facts.tool_results[str(body["id"])] = message.content
            facts.tool_results.update(converse.tool_results(body.get("content")))
            inputs.append(message)
    if inputs:
        rest, system = split_system(tuple(inputs))
        facts.put("input", rest, source + " gen_ai.*.message")
        facts.put("system", system, source + " gen_ai.system.message")
    if outputs:
        facts.put("output", tuple(outputs), source + " gen_ai.choice")
    return facts


def _event_message(body: Mapping[str, Any], role: str) -> Message:
    content = body.get("content")
    if content is None and isinstance(body.get("message"), str | list):
        content = body["message"]  # Strands: gen_ai.choice carries {"message": text or content blocks}
    return Message(
        role=role_of(body.get("role"), role),
        content=text_of(content),
        tool_calls=openai_tool_calls(body.get("tool_calls")) or converse.tool_uses(content),
    )


def _legacy_content_event(facts: SpanFacts, name: str, body: Any) -> None:
    """The first GenAI events: one ``gen_ai.content.prompt`` / ``.completion`` event with the whole JSON."""
    if not isinstance(body, Mapping):
        return
    if name == "gen_ai.content.prompt":
        parsed = chat_messages(json_or_text(as_text(body.get("gen_ai.prompt"))), "user")
        if parsed is not None:
            messages, system = split_system(parsed[0])
            facts.put("input", messages, f"{DIALECT}:event gen_ai.content.prompt")
            facts.put("system", system, f"{DIALECT}:event gen_ai.content.prompt")
            facts.tool_results.update(parsed[1])
    else:
        parsed = chat_messages(json_or_text(as_text(body.get("gen_ai.completion"))), "assistant")
        if parsed is not None:
            facts.put("output", parsed[0], f"{DIALECT}:event gen_ai.content.completion")
