"""Tolerant readers for the value shapes the dialects use.

Attribute values arrive in their stored string form (JSON for arrays and maps),
so everything here takes text or decoded JSON and never raises: a value that
does not have the expected shape yields ``None``, and the field stays missing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spanscore.collector.conventions.langchain import plain_message, tool_arguments, tool_result
from spanscore.run import Message, ToolCall

_ROLE_ALIASES = {"human": "user", "ai": "assistant", "model": "assistant", "developer": "system", "function": "tool"}


def load_json(text: str | None) -> Any:
    """Decoded JSON, or None when ``text`` is missing or not JSON."""
    if text is None or not text:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def json_or_text(text: str | None) -> Any:
    """Decoded JSON when ``text`` is JSON, else the text itself."""
    value = load_json(text)
    return text if value is None else value


def as_text(value: Any) -> str | None:
    """A string for a scalar or structured value (structured values as JSON), None for None."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def canonical_json(text: str | None) -> str | None:
    """JSON object or array text in one spelling (``json.dumps`` defaults); other text unchanged.

    Tool results reach spans re-serialised by each framework (``{"a":1}`` vs ``{"a": 1}``); one
    spelling lets the same result compare equal whatever dialect carried it.
    """
    value = load_json(text) if text and text[:1] in "[{" else None
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return text


def tool_result_text(text: str | None) -> str | None:
    """A tool result as the tool returned it.

    AI SDK 7 JSON-encodes every result, so a tool that returned the JSON text of an object arrives as
    a JSON string holding that text; a value that is one JSON string is that string. Anything else is
    kept as sent.
    """
    if text is None or not text.startswith('"'):
        return text
    value = load_json(text)
    return value if isinstance(value, str) else text


def as_int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(float(text))
    except (ValueError, OverflowError):
        return None


def non_empty(text: str | None) -> str | None:
    return text if text else None


_API_SUFFIXES = (".chat", ".responses", ".completion", ".embedding", ".image")


def provider_name(value: str | None) -> str | None:
    """A provider name in the convention's lowercase, without the API suffix the AI SDK appends.

    ``OpenAI`` (early OpenLLMetry) and ``openai.chat`` (AI SDK) both become ``openai``.
    """
    if not value:
        return None
    value = value.lower()
    for suffix in _API_SUFFIXES:
        if value.endswith(suffix):
            return value[: -len(suffix)]
    return value


def arguments_of(value: Any) -> Mapping[str, Any] | str | None:
    """Tool arguments as a mapping when they are a JSON object, else as text."""
    if value is None:
        return None
    if isinstance(value, str):
        decoded = load_json(value)
        return decoded if isinstance(decoded, dict) else value
    if isinstance(value, Mapping):
        return dict(value)
    return as_text(value)


def role_of(value: Any, default: str) -> str:
    role = value if isinstance(value, str) and value else default
    return _ROLE_ALIASES.get(role, role)


def text_of(content: Any) -> str:
    """The text of a content value: a string, or the text parts of a part list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, list):
        return as_text(content) or ""
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type", "text") in ("text", "input_text", "output_text"):
            text = part.get("text", part.get("content"))
            if isinstance(text, str):
                texts.append(text)
    return "\n".join(texts)


def openai_tool_calls(value: Any) -> tuple[ToolCall, ...]:
    """Tool calls in the OpenAI chat shape (``function.name`` / ``function.arguments``) or flat."""
    if not isinstance(value, list):
        return ()
    calls: list[ToolCall] = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            continue
        nested = item.get("function")
        function: Mapping[str, Any] = nested if isinstance(nested, Mapping) else item
        name = function.get("name") or item.get("toolName")
        if not isinstance(name, str) or not name:
            continue
        arguments = function.get("arguments", item.get("args", item.get("input")))
        call_id = item.get("id", item.get("toolCallId"))
        calls.append(ToolCall(name=name, arguments=arguments_of(arguments), id=as_text(call_id), order=index))
    return tuple(calls)


def chat_messages(value: Any, default_role: str) -> tuple[tuple[Message, ...], dict[str, str]] | None:
    """OpenAI-style chat messages (role, content, tool_calls, tool_call_id) and the tool results among them."""
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        return None
    messages: list[Message] = []
    results: dict[str, str] = {}
    for item in value:
        if isinstance(item, str):
            messages.append(Message(role=default_role, content=item))
            continue
        item = plain_message(item)
        if not isinstance(item, Mapping):
            continue
        role = role_of(item.get("role"), default_role)
        content = text_of(item.get("content"))
        call_id = item.get("tool_call_id", item.get("id") if role == "tool" else None)
        if role == "tool" and call_id is not None:
            results[str(call_id)] = content
        messages.append(Message(role=role, content=content, tool_calls=openai_tool_calls(item.get("tool_calls"))))
    return tuple(messages), results


def split_system(messages: tuple[Message, ...]) -> tuple[tuple[Message, ...], str | None]:
    """Separate system messages (joined) from the rest."""
    system = [m.content for m in messages if m.role == "system"]
    rest = tuple(m for m in messages if m.role != "system")
    return rest, ("\n".join(system) if system else None)


def indexed(attributes: Mapping[str, str], prefix: str) -> list[dict[str, str]]:
    """Group flattened ``prefix.N.rest`` attributes into one dict per N (keyed by ``rest``), in N order."""
    groups: dict[int, dict[str, str]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index_text, _, rest = key[len(prefix) :].partition(".")
        if not index_text.isdigit() or not rest:
            continue
        groups.setdefault(int(index_text), {})[rest] = value
    return [groups[index] for index in sorted(groups)]


def is_blank(messages: tuple[Message, ...]) -> bool:
    """No message says anything: no text (beyond whitespace) and no tool call.

    Instrumentations write placeholders (a role with no content); such a value must never stand in
    for a field that another attribute or span fills with the real text.
    """
    return all(not message.content.strip() and not message.tool_calls for message in messages)


def final_answer(messages: tuple[Message, ...]) -> tuple[Message, ...] | None:
    """The answer in an output that is a whole conversation (a LangGraph state): the last assistant turn.

    An output made only of assistant messages is the answer as it is; one that also holds the user's
    question and tool results ends with the answer, after the last non-assistant message.
    """
    if all(message.role == "assistant" for message in messages):
        return messages
    last = max(index for index, message in enumerate(messages) if message.role != "assistant")
    answer = tuple(message for message in messages[last + 1 :] if message.content.strip())
    return answer or None


def call_arguments(value: Any) -> Any:
    """A tool's arguments from a recorded Python call (``{"args": [...], "kwargs": {...}, flags}``), else ``value``.

    Instrumentations that wrap the tool function itself (smolagents through OpenInference, traceloop's
    ``@tool``) record the call's positional and keyword arguments, not the arguments the model sent:
    keyword arguments alone are those, positional ones are kept under ``args``. BeeAI's instrumentation
    records its ``Tool.run(input, options)`` call, ``{"input": {...}, "options": ...}``: the arguments are
    the input (#29).
    """
    if isinstance(value, Mapping) and value.keys() == {"input", "options"} and isinstance(value["input"], Mapping):
        return dict(value["input"])
    if not isinstance(value, Mapping) or not isinstance(value.get("kwargs"), Mapping):
        return value
    if not value.keys() <= _CALL_KEYS:  # LlamaIndex records the keyword arguments alone: {"kwargs": {...}}
        return value
    args = value.get("args", [])
    if not isinstance(args, list):
        return value
    return dict(value["kwargs"]) if not args else {"args": args, **value["kwargs"]}


_CALL_KEYS = frozenset({"args", "kwargs", "sanitize_inputs_outputs"})
_OUTPUT_CONTENT_KEYS = ("raw_output", "content")


def tool_output_content(value: Any) -> Any:
    """The content of a tool output object that names its tool (LlamaIndex ``ToolOutput``, GenAI ``FunctionResponse``).

    Anything else is returned as it is.

    Some frameworks record what the tool function returned wrapped in their own result object
    (``{"tool_name": ..., "raw_output": ..., "blocks": [...], "is_error": ...}``,
    ``{"id": ..., "name": ..., "response": {...}}``), or as the chat message that carries it back to the
    model (a plain ``function`` or ``tool`` role message, which AG2 pairs with a success flag:
    ``[true, {"role": "function", "name": ..., "content": ...}]``); the tool's result is the content inside
    it, not the object.
    """
    if isinstance(value, Mapping) and _is_function_response(value):
        return value["response"]
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], bool):
        value = value[1] if _is_tool_message(value[1]) else value  # AG2's execute_function: (succeeded, message)
    if _is_tool_message(value):
        return value["content"]
    if not isinstance(value, Mapping) or "tool_name" not in value:
        return value
    for key in _OUTPUT_CONTENT_KEYS:
        if value.get(key) is not None:
            return value[key]
    return value


_FUNCTION_RESPONSE_KEYS = frozenset({"id", "name", "response", "will_continue", "scheduling", "parts"})


def _is_function_response(value: Mapping[str, Any]) -> bool:
    """A Google GenAI ``FunctionResponse``: ``{"id": ..., "name": tool, "response": {...}}``.

    ADK tool spans record it through OpenInference; the tool's result is its ``response`` object.
    """
    return (
        isinstance(value.get("name"), str)
        and isinstance(value.get("response"), Mapping)
        and value.keys() <= _FUNCTION_RESPONSE_KEYS
    )


_RESPONSE_KEY = "result"


def function_response_content(value: Any) -> Any:
    """What a tool returned, out of the one-key ``{"result": value}`` function response it was wrapped in.

    A function response sent back to a model must be an object, so frameworks built on that API (Google ADK)
    wrap a tool's string, number or list return in ``{"result": ...}``; an object the tool returned is sent as
    it is. A one-key ``result`` object holding anything but an object is such a wrapper.
    """
    if isinstance(value, Mapping) and len(value) == 1 and _RESPONSE_KEY in value:
        inner = value[_RESPONSE_KEY]
        if inner is not None and not isinstance(inner, Mapping):
            return inner
    return value


def model_name(model: str | None, provider: str | None) -> str | None:
    """A model id without the ``provider/`` routing prefix when it names the span's own provider.

    Routers such as LiteLLM (and the frameworks that call models through it, Google ADK's ``LiteLlm``) take
    ``openai/gpt-4o-mini`` to mean model ``gpt-4o-mini`` at provider ``openai`` and report the routing id as the
    model; the provider is already its own field. A prefix naming another provider (OpenRouter's
    ``openai/gpt-4o`` at ``openrouter``) is part of that model's id and kept.
    """
    if not model or not provider:
        return model
    head, slash, rest = model.partition("/")
    return rest if slash and rest and provider_name(head) == provider else model


def _is_tool_message(value: Any) -> bool:
    """A plain chat message that carries a tool's result back to the model: a tool or function role, with content."""
    return isinstance(value, Mapping) and value.get("role") in ("tool", "function") and "content" in value


def tool_call(name: str, arguments: Any, result: Any, call_id: str | None) -> ToolCall:
    """A tool call from a span's raw argument and result values, unwrapping LangChain's tool envelopes.

    A result that is text and not a LangChain message is kept exactly as the span carried it.
    """
    argument_value, argument_id = tool_arguments(json_or_text(arguments) if isinstance(arguments, str) else arguments)
    argument_value = call_arguments(argument_value)
    decoded = json_or_text(result) if isinstance(result, str) else result
    content = function_response_content(tool_output_content(decoded))
    if content is not decoded:
        decoded = result = content
    result_value, result_id = tool_result(decoded)
    text = result if result_id is None and isinstance(result, str) else as_text(result_value)
    return ToolCall(
        name=name, arguments=arguments_of(argument_value), result=text, id=call_id or argument_id or result_id
    )
