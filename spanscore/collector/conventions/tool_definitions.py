"""The tools a model was offered on one LLM call, in every spelling the dialects use.

The four shapes seen on real spans (tests/fixtures/traces):

- ``gen_ai.tool.definitions`` (GenAI conventions; OpenLLMetry, pydantic-ai, AI SDK 7, Mastra):
  a JSON array of ``{"type": "function", "name", "description", "parameters" | "inputSchema"}``,
  or of plain tool names (Mastra);
- ``llm.tools.N.tool.json_schema`` (OpenInference): one JSON object per tool, OpenAI's
  ``{"type": "function", "function": {"name", "description", "parameters"}}`` or flat;
- ``llm.request.functions.N.name`` / ``.description`` / ``.parameters`` (older OpenLLMetry);
- ``ai.prompt.tools`` (AI SDK 5 to 7 legacy): an array of JSON strings, one tool each.

The keys belong to no other field, so one reader serves every dialect (its keys are inside the
prefixes the dialects declare, so the span gate in ``precedence`` still holds). A shape that
does not parse gives nothing rather than a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from spanscore.collector.conventions.parsing import load_json
from spanscore.run import ToolSpec

_OPENINFERENCE = re.compile(r"^llm\.tools\.(\d+)\.tool\.json_schema$")
_OPENLLMETRY = re.compile(r"^llm\.request\.functions\.(\d+)\.(name|description|parameters)$")


def offered_tools(attributes: Mapping[str, str]) -> tuple[tuple[ToolSpec, ...], str] | None:
    """The tools offered and the attribute they came from, or None when the span lists none."""
    for key in ("gen_ai.tool.definitions", "ai.prompt.tools"):
        if key in attributes:
            tools = tool_list(load_json(attributes[key]))
            if tools:
                return tools, key
    indexed = _indexed(attributes)
    if indexed:
        return indexed
    return None


def tool_list(value: Any) -> tuple[ToolSpec, ...]:
    """The tools in a list of definitions (OpenAI's nested shape, flat, JSON text or plain names); () if none."""
    if not isinstance(value, list):
        return ()
    tools = []
    for item in value:
        if isinstance(item, str) and item[:1] == "{":  # ai.prompt.tools: each tool is JSON text
            item = load_json(item)
        spec = _spec(item)
        if spec is not None:
            tools.append(spec)
    return tuple(tools)


def _spec(item: Any) -> ToolSpec | None:
    """One tool from a name, a flat definition or OpenAI's ``{"type": "function", "function": {...}}``."""
    if isinstance(item, str):
        return ToolSpec(item) if item else None
    if not isinstance(item, Mapping):
        return None
    if isinstance(item.get("function"), Mapping):
        item = item["function"]
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return None
    description = item.get("description")
    parameters = item.get("parameters", item.get("inputSchema", item.get("input_schema")))
    return ToolSpec(
        name,
        description if isinstance(description, str) else None,
        parameters if isinstance(parameters, Mapping) else None,
    )


def _indexed(attributes: Mapping[str, str]) -> tuple[tuple[ToolSpec, ...], str] | None:
    """OpenInference's and older OpenLLMetry's one-attribute-per-tool forms, in index order."""
    openinference: dict[int, ToolSpec] = {}
    functions: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith("llm."):
            continue
        if match := _OPENINFERENCE.match(key):
            spec = _spec(load_json(value))
            if spec is not None:
                openinference[int(match.group(1))] = spec
        elif match := _OPENLLMETRY.match(key):
            part = match.group(2)
            functions.setdefault(int(match.group(1)), {})[part] = load_json(value) if part == "parameters" else value
    if openinference:
        return tuple(openinference[i] for i in sorted(openinference)), "llm.tools.N.tool.json_schema"
    specs = [_spec(functions[i]) for i in sorted(functions)]
    tools = tuple(spec for spec in specs if spec is not None)
    return (tools, "llm.request.functions.N") if tools else None
