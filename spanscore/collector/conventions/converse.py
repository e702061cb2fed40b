"""Content blocks in the Bedrock Converse shape, as Strands Agents writes them into GenAI events.

Strands reports messages with its model-neutral content blocks rather than
OpenAI chat fields: ``[{"text": ...}]`` for text (read by ``text_of``),
``[{"toolUse": {"toolUseId", "name", "input"}}]`` for a tool call the model
made and ``[{"toolResult": {"toolUseId", "content": [{"text": ...}]}}]`` for
the result it was shown. This module reads the two tool blocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spanscore.collector.conventions.parsing import arguments_of, as_text, text_of
from spanscore.run import ToolCall


def _blocks(content: Any, kind: str) -> list[Mapping[str, Any]]:
    if not isinstance(content, list):
        return []
    return [item[kind] for item in content if isinstance(item, Mapping) and isinstance(item.get(kind), Mapping)]


def tool_uses(content: Any) -> tuple[ToolCall, ...]:
    """The ``toolUse`` blocks of a message's content, as tool calls in order."""
    calls: list[ToolCall] = []
    for block in _blocks(content, "toolUse"):
        name = block.get("name")
        if isinstance(name, str) and name:
            call_id = as_text(block.get("toolUseId"))
            calls.append(ToolCall(name, arguments_of(block.get("input")), id=call_id, order=len(calls)))
    return tuple(calls)


def tool_results(content: Any) -> dict[str, str]:
    """The ``toolResult`` blocks of a message's content: result text by tool call id (empty results left out)."""
    results = {}
    for block in _blocks(content, "toolResult"):
        call_id, text = block.get("toolUseId"), text_of(block.get("content"))
        if call_id is not None and text:
            results[str(call_id)] = text
    return results
