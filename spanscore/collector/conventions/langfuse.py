"""The Langfuse SDK's own attributes (``langfuse.*``, SDK v3 and later, which is built on OpenTelemetry).

Each Langfuse observation is a span: ``langfuse.observation.type`` says what it is (``agent``,
``generation``, ``tool``, ``retriever``, ``chain``, ``span``, ``event``, ...), its name is the span's
name, and ``langfuse.observation.input`` / ``.output`` hold what went in and came out as JSON text (a
string is sent as it is). Their shapes depend on who made the observation:

- ``@observe`` records the decorated call, ``{"args": [...], "kwargs": {...}}``, and what it returned;
- the ``langfuse.openai`` drop-in records the request (``{"messages": [...], "tools": [...]}``) and the
  response message, in OpenAI's chat shape, with ``langfuse.observation.model.name``;
- the LangChain callback handler records a chat model's messages as a list, a chain's LangGraph state
  (``{"messages": [...]}`` with LangChain's serialised messages), a tool's arguments and its ToolMessage,
  and ``langfuse.observation.metadata.*`` (``ls_provider``, ``lc_agent_name``, ``tool_call_id``).

Trace-wide values are copied onto every span: ``session.id``, ``user.id``, ``langfuse.trace.name``,
``langfuse.trace.tags`` and ``langfuse.trace.metadata.*``; SDK v3 also set ``langfuse.trace.input`` and
``.output``, read here after the observation's own. The SDK writes no ``gen_ai.*`` attribute at all, and
its drop-in names no provider: an OpenAI drop-in call is known by its name, ``OpenAI-generation``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spanscore.collector.conventions import finish
from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.conventions.openinference import value_messages
from spanscore.collector.conventions.parsing import (
    as_int,
    chat_messages,
    final_answer,
    load_json,
    non_empty,
    split_system,
    tool_call,
)
from spanscore.collector.conventions.tool_definitions import tool_list
from spanscore.records import SpanRecord

DIALECT = "langfuse"
ATTRIBUTE_PREFIXES = ("langfuse.",)
TYPE = "langfuse.observation.type"
INPUT = "langfuse.observation.input"
OUTPUT = "langfuse.observation.output"
MODEL = "langfuse.observation.model.name"
METADATA = "langfuse.observation.metadata."
_KINDS = {
    "agent": "agent",
    "generation": "llm",
    "embedding": "embedding",
    "tool": "tool",
    "retriever": "retriever",
    "chain": "chain",
}
"""Observation types that are a span kind; ``span``, ``event``, ``evaluator`` and ``guardrail`` are none."""
_PLAIN = frozenset({"span", "chain"})
"""Observation types a decorated function gets when it is not said to be an agent, tool or model call."""
_DROP_IN_PROVIDERS = {"OpenAI-generation": "openai", "OpenAI-embedding": "openai"}
"""The provider of a ``langfuse.openai`` call, whose only trace of it is the name it gives the observation."""


def extract(span: SpanRecord) -> SpanFacts:
    attributes = span.attributes
    facts = SpanFacts()
    observation_type = attributes.get(TYPE)
    if observation_type is None:
        return facts
    kind = _KINDS.get(observation_type)
    facts.put("kind", kind, f"{DIALECT}:{TYPE}")
    if kind == "agent":
        facts.put("agent_name", _metadata(attributes, "lc_agent_name"), _meta("lc_agent_name"))
        facts.put("agent_name", non_empty(span.name), f"{DIALECT}:observation name")
    elif observation_type in _PLAIN:
        # A plain @observe() function at the root is the run of a trace with no agent observation: its name
        # (else the trace's) is the best guess at the agent's, and any agent name a span gives beats it.
        facts.put("agent_label", non_empty(span.name), f"{DIALECT}:observation name")
        facts.put("agent_label", non_empty(attributes.get("langfuse.trace.name")), f"{DIALECT}:langfuse.trace.name")
    if kind == "llm":
        _generation(facts, attributes, span.name)
    elif kind == "tool":
        _tool(facts, attributes, span.name)
    elif kind == "retriever":
        facts.put("documents", _documents(load_json(attributes.get(OUTPUT))), f"{DIALECT}:{OUTPUT}")
    elif kind != "embedding":
        _call(facts, attributes)
    facts.put("session_id", non_empty(attributes.get("session.id")), f"{DIALECT}:session.id")
    facts.put("user_id", non_empty(attributes.get("user.id")), f"{DIALECT}:user.id")
    if attributes.get("langfuse.observation.level") == "ERROR":
        error = non_empty(attributes.get("langfuse.observation.status_message")) or "error"
        facts.put("error", error, f"{DIALECT}:langfuse.observation.level")
    return facts


def _meta(key: str) -> str:
    return f"{DIALECT}:{METADATA}{key}"


def _metadata(attributes: Mapping[str, str], key: str) -> str | None:
    """A string the observation's metadata holds under ``key`` (each metadata value is JSON text), else None."""
    value: Any = load_json(attributes.get(METADATA + key))
    return non_empty(value) if isinstance(value, str) else None


def _call(facts: SpanFacts, attributes: Mapping[str, str]) -> None:
    """An agent, chain or plain span: its input and output, then the trace's (SDK v3) for what it lacks."""
    for name, key, role in (
        ("input", INPUT, "user"),
        ("output", OUTPUT, "assistant"),
        ("input", "langfuse.trace.input", "user"),
        ("output", "langfuse.trace.output", "assistant"),
    ):
        messages = _messages(attributes.get(key), role)
        if messages:
            rest, system = split_system(messages)
            facts.put(name, final_answer(rest) if name == "output" and rest else rest, f"{DIALECT}:{key}")
            facts.put("system", system, f"{DIALECT}:{key}")


def _messages(text: str | None, role: str) -> tuple[Any, ...] | None:
    """The messages in an observation's input or output: a decorated call's argument, chat messages or text."""
    if text is None:
        return None
    value: Any = load_json(text)
    if value is None:  # not JSON: a string the function took or returned, sent as it is
        return value_messages(text, "text/plain", role)
    value = _called_with(value)
    if isinstance(value, str):
        return value_messages(value, "text/plain", role)
    return value_messages(json.dumps(value), "application/json", role)


def _called_with(value: Any) -> Any:
    """What a decorated function was asked: its one argument, else its keyword arguments; other values unchanged.

    ``@observe`` records ``{"args": [...], "kwargs": {...}}``; an agent function's prompt is usually its one
    argument (``weather_agent(question)``), or one of its keyword arguments (``question=...``).
    """
    if not isinstance(value, Mapping) or set(value) != {"args", "kwargs"}:
        return value
    args, kwargs = value["args"], value["kwargs"]
    if not isinstance(args, list) or not isinstance(kwargs, Mapping):
        return value
    if len(args) == 1 and not kwargs:
        return args[0]
    if not args and len(kwargs) == 1:
        return next(iter(kwargs.values()))
    return dict(kwargs) if not args else value


def _generation(facts: SpanFacts, attributes: Mapping[str, str], span_name: str) -> None:
    """A model call: its request (messages, tools), its response message, the model and the tokens."""
    request: Any = load_json(attributes.get(INPUT))
    messages = request.get("messages") if isinstance(request, Mapping) else request
    parsed = chat_messages(_without_tool_definitions(messages), "user")
    if parsed is not None:
        rest, system = split_system(parsed[0])
        facts.put("input", rest, f"{DIALECT}:{INPUT}")
        facts.put("system", system, f"{DIALECT}:{INPUT}")
        facts.tool_results.update(parsed[1])
    offered = tool_list(request.get("tools")) if isinstance(request, Mapping) else ()
    facts.put("tools", offered or None, f"{DIALECT}:{INPUT} tools")
    output: Any = load_json(attributes.get(OUTPUT))
    response = chat_messages(output, "assistant")
    if response is not None:
        facts.put("output", response[0], f"{DIALECT}:{OUTPUT}")
    facts.put("finish_reason", _finish_reason(output), f"{DIALECT}:{OUTPUT} finish_reason")
    facts.put("model", non_empty(attributes.get(MODEL)), f"{DIALECT}:{MODEL}")
    facts.put("model", _metadata(attributes, "ls_model_name"), _meta("ls_model_name"))
    facts.put("provider", _metadata(attributes, "ls_provider"), _meta("ls_provider"))
    facts.put("provider", _DROP_IN_PROVIDERS.get(span_name), f"{DIALECT}:observation name (langfuse.openai)")
    usage: Any = load_json(attributes.get("langfuse.observation.usage_details"))
    if isinstance(usage, Mapping):
        source = f"{DIALECT}:langfuse.observation.usage_details"
        facts.put("input_tokens", _tokens(usage, "input", "prompt_tokens"), source)
        facts.put("output_tokens", _tokens(usage, "output", "completion_tokens"), source)


def _finish_reason(output: Any) -> str | None:
    """Why the call stopped: on the message (OpenAI's drop-in), or in LangChain's ``response_metadata``."""
    messages = output if isinstance(output, list) else [output]
    metadata = [m["response_metadata"] for m in messages if isinstance(m, Mapping) and "response_metadata" in m]
    return finish.from_messages(messages) or finish.from_messages(metadata) or finish.from_response(output)


def _without_tool_definitions(messages: Any) -> Any:
    """The request's messages without the ``tool`` messages whose content is a tool's definition.

    Langfuse's LangChain handler lists the tools offered to the model among the messages, as ``tool``
    messages holding ``{"type": "function", "function": {...}}``: they are no tool results.
    """
    if not isinstance(messages, list):
        return messages
    return [
        item
        for item in messages
        if not (isinstance(item, Mapping) and item.get("role") == "tool" and isinstance(item.get("content"), Mapping))
    ]


def _tokens(usage: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            return as_int(value)
    return None


_DOCUMENT_TEXT_KEYS = ("page_content", "content", "text")


def _documents(value: Any) -> tuple[str, ...] | None:
    """The texts a retriever returned: strings, or documents holding their text (LangChain's ``page_content``)."""
    if isinstance(value, Mapping) and isinstance(value.get("documents"), list):
        value = value["documents"]
    if not isinstance(value, list):
        return None
    texts = []
    for item in value:
        if isinstance(item, Mapping):
            item = next((item[key] for key in _DOCUMENT_TEXT_KEYS if isinstance(item.get(key), str)), None)
        if isinstance(item, str):
            texts.append(item)
    return tuple(texts) or None


def _tool(facts: SpanFacts, attributes: Mapping[str, str], span_name: str) -> None:
    name = non_empty(span_name)
    if name is None:
        return
    call_id = _metadata(attributes, "tool_call_id")
    call = tool_call(name, attributes.get(INPUT), attributes.get(OUTPUT), call_id)
    facts.put("tool", call, f"{DIALECT}:observation name")
