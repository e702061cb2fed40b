"""LangChain's serialised objects, as OpenInference and OpenLLMetry carry them in attribute values.

LangChain and LangGraph hand their callbacks live message objects; the
instrumentations write them out in one of LangChain's own serialisations
rather than as chat messages:

- ``message_to_dict``: ``{"type": "ai", "data": {"content": ..., "tool_calls": [...]}}``;
- the message's pydantic dump: ``{"type": "ai", "content": ..., "additional_kwargs": {}, ...}``;
- the ``Serializable`` form: ``{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}``;
- callback envelopes around them: ``{"inputs": ...}`` / ``{"outputs": ...}`` for chains,
  ``{"input_str": ..., "inputs": {...}, "kwargs": {"tool_call_id": ...}}`` and
  ``{"output": <ToolMessage>}`` for tools.

This module turns each into the plain chat shape (``role``, ``content``,
``tool_calls``, ``tool_call_id``) the dialect readers already understand, so a
LangChain message reads the same whichever instrumentation carried it and
wherever it sits (chain input, chain output, tool arguments, tool result).
Anything else passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MESSAGE_TYPES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
    "chat": "user",
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
}
_DUMPED_KEYS = frozenset({"type", "content", "additional_kwargs", "response_metadata"})
"""Keys of a message's own pydantic dump (``message.model_dump()``: Langfuse's LangChain handler), flat."""
_ENVELOPE_KEYS = ("inputs", "outputs", "output")
_CALLBACK_KEYS = frozenset({"tags", "metadata", "kwargs", "input_str", "run_id", "parent_run_id"})


def message_fields(item: Any) -> Mapping[str, Any] | None:
    """The plain chat fields of a serialised LangChain message, or None when ``item`` is not one."""
    if not isinstance(item, Mapping):
        return None
    body: Any = None
    kind: Any = None
    if item.get("lc") == 1 and item.get("type") == "constructor" and isinstance(item.get("id"), list):
        body, kind = item.get("kwargs"), item["id"][-1] if item["id"] else None
    elif isinstance(item.get("data"), Mapping) and isinstance(item.get("type"), str):
        body, kind = item["data"], item["type"]
    elif _DUMPED_KEYS <= item.keys() and isinstance(item.get("type"), str):
        body, kind = item, item["type"]
    if not isinstance(body, Mapping) or _MESSAGE_TYPES.get(str(kind)) is None:
        return None
    fields: dict[str, Any] = {"role": _MESSAGE_TYPES[str(kind)], "content": body.get("content")}
    for key in ("tool_calls", "tool_call_id", "name"):
        if body.get(key) is not None:
            fields[key] = body[key]
    return fields


def plain_message(item: Any) -> Any:
    """``item`` as a plain chat message when it is a serialised LangChain message, else ``item`` itself."""
    fields = message_fields(item)
    return item if fields is None else fields


def unwrap(value: Any) -> Any:
    """The payload inside a LangChain callback envelope (``{"inputs": X, "tags": ...}`` -> X), else ``value``.

    Only a mapping whose other keys are callback bookkeeping (tags, metadata, kwargs ...) counts as an
    envelope, so a user's own ``{"output": ..., "score": ...}`` is left alone.
    """
    for _ in range(3):
        if not isinstance(value, Mapping):
            return value
        key = next((k for k in _ENVELOPE_KEYS if k in value), None)
        if key is None or not set(value).difference({key}) <= _CALLBACK_KEYS:
            return value
        value = value[key]
    return value


def tool_arguments(value: Any) -> tuple[Any, str | None]:
    """A tool's arguments and call id from a LangChain tool-start envelope; other values unchanged, no id."""
    if isinstance(value, Mapping) and "input_str" in value and set(value) <= _CALLBACK_KEYS | {"inputs"}:
        kwargs = value.get("kwargs")
        call_id = kwargs.get("tool_call_id") if isinstance(kwargs, Mapping) else None
        arguments = value.get("inputs") if isinstance(value.get("inputs"), Mapping) else value.get("input_str")
        return arguments, call_id if isinstance(call_id, str) else None
    return value, None


def tool_result(value: Any) -> tuple[Any, str | None]:
    """A tool's result and call id when ``value`` is (an envelope around) a ToolMessage; else unchanged, no id."""
    fields = message_fields(unwrap(value))
    if fields is None or fields["role"] != "tool":
        return value, None
    call_id = fields.get("tool_call_id")
    return fields.get("content"), call_id if isinstance(call_id, str) else None
