"""OpenLLMetry (traceloop) attributes.

Workflow, agent, task and tool spans from the traceloop SDK decorators
(``traceloop.span.kind``, ``traceloop.entity.name``, ``traceloop.entity.input``
as ``{"args": [...], "kwargs": {...}}`` JSON, ``traceloop.entity.output`` as
JSON), association properties for session and user, and the flattened chat
attributes of its instrumentations before they moved to the GenAI JSON
messages: ``gen_ai.prompt.N.*``, ``gen_ai.completion.N.*``, ``llm.usage.*``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spanscore.collector.conventions import finish
from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.conventions.langchain import message_fields, unwrap
from spanscore.collector.conventions.parsing import (
    arguments_of,
    as_int,
    as_text,
    chat_messages,
    final_answer,
    indexed,
    json_or_text,
    load_json,
    non_empty,
    role_of,
    split_system,
    text_of,
    tool_call,
)
from spanscore.records import SpanRecord
from spanscore.run import Message, ToolCall

DIALECT = "openllmetry"
KIND = "traceloop.span.kind"
_KINDS = {"workflow": "agent", "agent": "agent", "tool": "tool", "task": "chain"}
_ASSOCIATION = "traceloop.association.properties."
ATTRIBUTE_PREFIXES = (
    "traceloop.",
    "llm.",
    "gen_ai.prompt.",
    "gen_ai.completion.",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.completion_tokens",
)
"""Every span attribute ``extract`` reads starts with one of these; a span with none yields no facts.

Only the ``gen_ai.*`` keys its instrumentations wrote before the GenAI JSON messages, not ``gen_ai.`` as a
whole: a span in today's GenAI conventions (``gen_ai.input.messages``, ``gen_ai.usage.input_tokens``) would
otherwise be run through this extractor too, for nothing, at about half of its filter view's cost (#43)."""
_QUESTION_KEYS = ("messages", "input", "query", "question", "prompt", "message", "text")


def extract(span: SpanRecord) -> SpanFacts:
    attributes = span.attributes
    get = attributes.get
    facts = SpanFacts()
    kind = _KINDS.get(get(KIND) or "")
    facts.put("kind", kind, f"{DIALECT}:{KIND}")
    if kind == "agent":
        facts.put("agent_name", non_empty(get("traceloop.entity.name")), f"{DIALECT}:traceloop.entity.name")
    if kind == "tool":
        _tool(facts, attributes)
    elif kind is not None:
        _entity(facts, attributes)
    _flattened_chat(facts, attributes)
    for field, keys in (("session_id", ("session_id", "sessionId")), ("user_id", ("user_id", "userId"))):
        for key in keys:
            facts.put(field, non_empty(get(_ASSOCIATION + key)), f"{DIALECT}:{_ASSOCIATION}{key}")
    for key in ("llm.usage.prompt_tokens", "gen_ai.usage.prompt_tokens"):
        facts.put("input_tokens", as_int(get(key)), f"{DIALECT}:{key}")
    for key in ("llm.usage.completion_tokens", "gen_ai.usage.completion_tokens"):
        facts.put("output_tokens", as_int(get(key)), f"{DIALECT}:{key}")
    facts.put("model", non_empty(get("llm.request.model")), f"{DIALECT}:llm.request.model")
    for prefix in ("gen_ai.completion.", "llm.completions."):
        if (reason := finish.from_indexed(attributes, prefix, ".finish_reason")) is not None:
            facts.put("finish_reason", reason[0], f"{DIALECT}:{reason[1]}")
    return facts


def _entity(facts: SpanFacts, attributes: Mapping[str, str]) -> None:
    value = load_json(attributes.get("traceloop.entity.input"))
    conversation = _conversation(value, "user")
    if conversation is not None:
        rest, system = split_system(conversation)
        facts.put("input", rest, f"{DIALECT}:traceloop.entity.input")
        facts.put("system", system, f"{DIALECT}:traceloop.entity.input")
    question = _entity_input_text(value)
    if question is not None:
        facts.put("input", (Message("user", question),), f"{DIALECT}:traceloop.entity.input")
    output = json_or_text(attributes.get("traceloop.entity.output"))
    conversation = _conversation(output, "assistant")
    if conversation is not None:
        facts.put("output", final_answer(split_system(conversation)[0]), f"{DIALECT}:traceloop.entity.output")
    if isinstance(output, Mapping):
        output = next((output[k] for k in ("output", "answer", "text", "content", "result") if k in output), output)
    if output is not None:
        text = output if isinstance(output, str) else text_of(output) or as_text(output) or ""
        facts.put("output", (Message("assistant", text),), f"{DIALECT}:traceloop.entity.output")


def _conversation(value: Any, role: str) -> tuple[Message, ...] | None:
    """Chat messages in a LangChain callback value (``{"inputs": {"messages": [...]}}``), else None."""
    value = unwrap(value)
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        value = value["messages"]
    elif message_fields(value) is not None:
        value = [value]
    if not isinstance(value, list) or not any(message_fields(item) or _is_chat(item) for item in value):
        return None
    parsed = chat_messages(value, role)
    return parsed[0] if parsed is not None else None


def _is_chat(item: Any) -> bool:
    return isinstance(item, Mapping) and isinstance(item.get("role"), str)


def _entity_input_text(value: Any) -> str | None:
    """The user's question in a decorated function's ``{"args", "kwargs"}``: the first string argument."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return None
    candidates: list[Any] = list(value.get("args") or ()) if isinstance(value.get("args"), list) else []
    given = value.get("kwargs")
    kwargs: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    candidates += [kwargs[key] for key in _QUESTION_KEYS if key in kwargs]
    for candidate in candidates:
        if isinstance(candidate, str):
            return candidate
        if isinstance(candidate, list) and candidate:
            return text_of(candidate[-1].get("content") if isinstance(candidate[-1], Mapping) else candidate[-1])
    return None


def _tool(facts: SpanFacts, attributes: Mapping[str, str]) -> None:
    name = attributes.get("traceloop.entity.name")
    if not name:
        return
    value = load_json(attributes.get("traceloop.entity.input"))
    arguments: Any = value
    if isinstance(value, Mapping) and "input_str" not in value:
        args = value.get("args") or []
        kwargs = value.get("kwargs") or {}
        arguments = kwargs if not args and isinstance(kwargs, Mapping) else {"args": args, **dict(kwargs)}
    result = json_or_text(attributes.get("traceloop.entity.output"))
    call = tool_call(name, arguments, as_text(result), None)
    facts.put("tool", call, f"{DIALECT}:traceloop.entity.input")


def _flattened_chat(facts: SpanFacts, attributes: Mapping[str, str]) -> None:
    prompts = indexed(attributes, "gen_ai.prompt.")
    if prompts:
        messages = tuple(_flat_message(group, "user", facts.tool_results) for group in prompts)
        rest, system = split_system(messages)
        facts.put("kind", "llm", f"{DIALECT}:gen_ai.prompt")
        facts.put("input", rest, f"{DIALECT}:gen_ai.prompt")
        facts.put("system", system, f"{DIALECT}:gen_ai.prompt")
    completions = indexed(attributes, "gen_ai.completion.")
    if completions:
        outputs = tuple(_flat_message(group, "assistant", {}) for group in completions)
        facts.put("kind", "llm", f"{DIALECT}:gen_ai.completion")
        facts.put("output", outputs, f"{DIALECT}:gen_ai.completion")


def _flat_message(group: dict[str, str], default_role: str, tool_results: dict[str, str]) -> Message:
    role = role_of(group.get("role"), default_role)
    content = group.get("content") or ""
    parts = load_json(content) if content.startswith("[") else None
    if isinstance(parts, list):
        content = text_of(parts)
    calls = []
    for index, call in enumerate(indexed(group, "tool_calls.")):
        if call.get("name"):
            calls.append(ToolCall(call["name"], arguments_of(call.get("arguments")), id=call.get("id"), order=index))
    if role == "tool" and group.get("tool_call_id"):
        tool_results[group["tool_call_id"]] = content
    return Message(role=role, content=content, tool_calls=tuple(calls))
