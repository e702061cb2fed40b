"""OpenInference (Arize Phoenix) attributes.

Span kind from ``openinference.span.kind``; chat messages flattened as
``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*``;
``input.value`` / ``output.value`` for agents, chains and tools; tools as
``tool.name`` with arguments in ``tool_call.function.arguments`` or else
``input.value``; retrieved documents as
``retrieval.documents.N.document.content``; ``session.id`` and ``user.id``.
An agent span names its agent as ``agent.name`` or, where an instrumentation
places agents in a graph (CrewAI, the OpenAI Agents SDK), as ``graph.node.id``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from spanscore.collector.conventions import ag2, crewai, finish, llama_index
from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.conventions.langchain import message_fields, unwrap
from spanscore.collector.conventions.parsing import (
    arguments_of,
    as_int,
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
from spanscore.collector.conventions.span_names import tool_name_from_span
from spanscore.records import SpanRecord
from spanscore.run import Message, ToolCall

DIALECT = "openinference"
KIND = "openinference.span.kind"
_KINDS = {"AGENT": "agent", "LLM": "llm", "TOOL": "tool", "RETRIEVER": "retriever", "CHAIN": "chain"}
ATTRIBUTE_PREFIXES = ("openinference.", "llm.", "input.value", "output.value", "retrieval.")
"""A span is read as OpenInference when one of its attribute keys starts with one of these, else it yields no facts."""


def extract(span: SpanRecord) -> SpanFacts:
    attributes = span.attributes
    get = attributes.get
    facts = SpanFacts()
    if not any(key.startswith(ATTRIBUTE_PREFIXES) for key in attributes):
        return facts
    kind = _KINDS.get((get(KIND) or "").upper())
    facts.put("kind", kind, f"{DIALECT}:{KIND}")
    if kind == "agent":
        facts.put("agent_name", ag2.answering_agent(attributes), f"{DIALECT}:{ag2.RECIPIENT}")
        facts.put("agent_name", non_empty(get("agent.name")), f"{DIALECT}:agent.name")
        facts.put("agent_name", non_empty(get("graph.node.id")), f"{DIALECT}:graph.node.id")
        facts.put("agent_label", agent_label(span.name), f"{DIALECT}:span name")
    if kind in ("agent", "chain"):
        source = f"{DIALECT}:{'/'.join(llama_index.VALUE_KEYS)} current_agent_name"
        facts.put("agent_name", llama_index.current_agent_name(attributes), source)
    _messages(facts, attributes)
    if kind == "tool":
        _tool(facts, attributes, span.name)
    elif kind != "llm":
        _values(facts, attributes)
        if kind in ("agent", "chain"):
            _task_output(facts, attributes)
    documents = [group.get("document.content") for group in indexed(attributes, "retrieval.documents.")]
    if documents:
        facts.put("documents", tuple(d for d in documents if d is not None), f"{DIALECT}:retrieval.documents")
    _finish_reason(facts, attributes, kind)
    facts.put("model", non_empty(get("llm.model_name")), f"{DIALECT}:llm.model_name")
    for key in ("llm.provider", "llm.system"):
        facts.put("provider", non_empty(get(key)), f"{DIALECT}:{key}")
    facts.put("session_id", non_empty(get("session.id")), f"{DIALECT}:session.id")
    facts.put("user_id", non_empty(get("user.id")), f"{DIALECT}:user.id")
    facts.put("input_tokens", as_int(get("llm.token_count.prompt")), f"{DIALECT}:llm.token_count.prompt")
    facts.put("output_tokens", as_int(get("llm.token_count.completion")), f"{DIALECT}:llm.token_count.completion")
    return facts


_METHOD_SPAN = re.compile(
    r"(?P<owner>[^.\s]+)\.(?P<method>a?(?:run|invoke|stream|call|chat|execute|kickoff)(?:_[a-z_]+)?|__call__)"
)
"""``owner.method`` with a method that runs an agent: the span name an instrumentation gives a wrapped call
(smolagents' ``NAME.run``); a dotted name with another tail (``support.v2``) is a name of its own."""


def agent_label(span_name: str) -> str | None:
    """The agent an agent span's own name suggests: its owner when the name is a method call, else the name.

    Instrumentations that wrap the agent's run method name the span after the call (``weather_agent.run``,
    ``FunctionAgent.run``); the agent is the owner of the method, not the call.
    """
    match = _METHOD_SPAN.fullmatch(span_name)
    return match.group("owner") if match else non_empty(span_name)


def _finish_reason(facts: SpanFacts, attributes: Mapping[str, str], kind: str | None) -> None:
    """``llm.finish_reason``, else the last output message's, else (a model call) the response in ``output.value``."""
    found = finish.from_attributes(attributes, ("llm.finish_reason",))
    found = found or finish.from_indexed(attributes, "llm.output_messages.", ".message.finish_reason")
    if found is not None:
        facts.put("finish_reason", found[0], f"{DIALECT}:{found[1]}")
    if kind == "llm":
        facts.put("finish_reason", finish.from_response(attributes.get("output.value")), f"{DIALECT}:output.value")


def _messages(facts: SpanFacts, attributes: Mapping[str, str]) -> None:
    inputs = [_message(group, "user", facts.tool_results) for group in indexed(attributes, "llm.input_messages.")]
    if inputs:
        rest, system = split_system(tuple(inputs))
        facts.put("input", rest, f"{DIALECT}:llm.input_messages")
        facts.put("system", system, f"{DIALECT}:llm.input_messages")
    outputs = [_message(group, "assistant", {}) for group in indexed(attributes, "llm.output_messages.")]
    if outputs:
        facts.put("output", tuple(outputs), f"{DIALECT}:llm.output_messages")


def _message(group: dict[str, str], default_role: str, tool_results: dict[str, str]) -> Message:
    role = role_of(group.get("message.role"), default_role)
    content = group.get("message.content")
    if content is None:
        parts = indexed(group, "message.contents.")
        content = "\n".join(p["message_content.text"] for p in parts if "message_content.text" in p)
    calls = []
    for index, call in enumerate(indexed(group, "message.tool_calls.")):
        name = call.get("tool_call.function.name")
        if name:
            arguments = arguments_of(call.get("tool_call.function.arguments"))
            calls.append(ToolCall(name, arguments, id=non_empty(call.get("tool_call.id")), order=index))
    call_id = group.get("message.tool_call_id")
    if role == "tool" and call_id:
        tool_results[call_id] = content
    if role == "tool" and not content:
        results = _function_results(group)
        tool_results.update(results)
        content = "\n".join(results.values())
    return Message(role=role, content=content, tool_calls=tuple(calls))


def _function_results(group: Mapping[str, str]) -> dict[str, str]:
    """Tool results a message carries as ``function.N`` JSON objects (``name``, ``content``, ``call_id``), by call id.

    AutoGen AgentChat's instrumentation writes a function-result message that way, one object per result,
    beside a ``message.role`` of ``function`` and no content.
    """
    numbered = sorted(
        (int(key[len("function.") :]), value)
        for key, value in group.items()
        if key.startswith("function.") and key[len("function.") :].isdigit()
    )
    results: dict[str, str] = {}
    for _, text in numbered:
        value = load_json(text)
        if isinstance(value, Mapping) and isinstance(value.get("content"), str):
            results[str(value.get("call_id", len(results)))] = value["content"]
    return results


def _values(facts: SpanFacts, attributes: Mapping[str, str]) -> None:
    """``input.value`` / ``output.value`` of agent and chain spans: text, or JSON with messages."""
    for name, key, role in (("input", "input.value", "user"), ("output", "output.value", "assistant")):
        messages = value_messages(attributes.get(key), attributes.get(key.replace("value", "mime_type")), role)
        if messages is not None:
            rest, system = split_system(messages)
            facts.put(name, final_answer(rest) if name == "output" else rest, f"{DIALECT}:{key}")
            facts.put("system", system, f"{DIALECT}:{key}")


def _task_output(facts: SpanFacts, attributes: Mapping[str, str]) -> None:
    """A CrewAI task's prompt, answer and agent from the ``TaskOutput`` its span returns (``conventions.crewai``).

    The span's ``input.value`` holds the agent's configuration, not the task, so the task's own
    description is the prompt; without it the prompt would be the first model call's, which CrewAI
    wraps in its framing (``Current Task: ...``).
    """
    task = crewai.task_output(attributes.get("output.value"))
    if task is None:
        return
    source = f"{DIALECT}:output.value (CrewAI TaskOutput)"
    if task.description is not None:
        facts.put("input", (Message(role="user", content=task.description),), f"{source} description")
    if task.raw is not None:
        facts.put("output", (Message(role="assistant", content=task.raw),), f"{source} raw")
    facts.put("agent_name", task.agent, f"{source} agent")


_OBJECT_REPR = re.compile(r"[A-Z]\w*\(\w+=")
"""A Python object's repr (``StopEvent(result=...)``): an instrumentation's fallback for a value it cannot serialise,
often truncated; the text a user wrote or read is in another span (LlamaIndex's workflow events)."""
_FIELDS_STR = re.compile(
    r"[A-Za-z_]\w*=(?:'|\"|None\b|True\b|False\b|-?\d|\[|\{|\(|[A-Za-z_][\w.]*\()"
    r"(?:.*?\s[A-Za-z_]\w*=(?:'|\"|None\b|True\b|False\b|-?\d|\[|\{|\(|[A-Za-z_][\w.]*\()){2}",
    re.DOTALL,
)
"""A pydantic model's ``str()`` (``id='…' source='user' content='…' type='TextMessage'``): at least three
``field=<Python literal>`` pairs. AutoGen AgentChat's instrumentation records the messages an agent was given this way;
the text is in the model calls' messages, never to be read out of a repr."""


def is_object_repr(text: str) -> bool:
    """Whether ``text`` is a Python object's repr or a pydantic model's ``str()``, not text anyone wrote."""
    return bool(_OBJECT_REPR.match(text) or _FIELDS_STR.match(text))


def value_messages(text: str | None, mime_type: str | None, role: str) -> tuple[Message, ...] | None:
    """The messages in an ``input.value`` / ``output.value``-like text of ``mime_type`` (also Langfuse's)."""
    if text is None or is_object_repr(text):
        return None
    # Without a mime type, a JSON object is still structured (smolagents sets none on its run kwargs).
    if mime_type != "application/json" and (mime_type is not None or not text.startswith("{")):
        return (Message(role=role, content=text),)
    value: Any = unwrap(json_or_text(text))
    if message_fields(value) is not None:
        value = [value]
    if isinstance(value, Mapping):
        # A chain's state or a run method's keyword arguments (smolagents: {"task": ..., "stream": ...},
        # AG2's initiate_chat: {"message": ..., "sender": ..., "recipient": ...}).
        for key in ("messages", "message", "input", "output", "text", "content", "answer", "query", "question", "task"):
            if key in value:
                value = value[key]
                break
        else:
            return None  # a workflow's internal state (LlamaIndex: {"init_state": ...}): no prompt or answer in it
    if isinstance(value, list):
        # Objects the instrumentation could only stringify (AutoGen's TextMessage) are no messages: a list of
        # nothing else says nothing, and the model calls' own messages hold the text.
        value = [item for item in value if not (isinstance(item, str) and is_object_repr(item))]
        parsed = chat_messages(value, role) if value else None
        return parsed[0] if parsed is not None else None
    if isinstance(value, str):
        return (Message(role=role, content=value),)
    if isinstance(value, Mapping) and isinstance(value.get("parts"), list):
        # A Google GenAI Content ({"role": "model", "parts": [{"text": ...}, {"function_call": ...}]}), which an
        # ADK event carries under "content": its text parts are what was said.
        return (Message(role=role_of(value.get("role"), role), content=text_of(value["parts"])),)
    return (Message(role=role, content=text_of(value) or text),)


def _tool(facts: SpanFacts, attributes: Mapping[str, str], span_name: str) -> None:
    name, source = attributes.get("tool.name"), f"{DIALECT}:tool.name"
    if not name:  # DSPy names the tool only in the span name (get_weather.__call__)
        name, source = tool_name_from_span(span_name), f"{DIALECT}:span name"
    if not name:
        return
    result = attributes.get("output.value")
    decoded = load_json(result) if attributes.get("output.mime_type") == "application/json" else None
    if isinstance(decoded, str):  # a string return, JSON-encoded (DSPy): the string itself
        result = decoded
    if source.endswith("span name") and name == "finish" and result == "Completed.":
        return  # DSPy ReAct's own end-of-loop marker, not a tool the agent used
    # The arguments the model sent, where the instrumentation records them apart from the call's input value
    # (AG2's input value is the whole function call: {"name": ..., "arguments": "<JSON text>"}).
    arguments = attributes.get("tool_call.function.arguments") or attributes.get("input.value")
    call = tool_call(name, arguments, result, non_empty(attributes.get("tool_call.id")))
    facts.put("tool", call, source)
