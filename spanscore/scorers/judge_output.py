"""Structured-output modes of the judge and how to read a verdict out of each.

The judge client asks every model for JSON in the strongest way the model
accepts and steps down a ladder when the model refuses a mode: JSON schema
(``response_format: json_schema``) -> JSON mode (``json_object``) -> a forced
tool call whose arguments are the verdict -> plain text. Whatever the mode,
the answer is read tolerantly: code fences, a reasoning preamble or prose
around the object do not matter, and the first JSON object that validates
against the step's pydantic schema wins. Validation itself stays strict.
"""

from __future__ import annotations

import enum
import functools
import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

VerdictT = TypeVar("VerdictT", bound=BaseModel)


class OutputMode(enum.IntEnum):
    """Rungs of the ladder, strongest first; a model remembers the rung it last accepted."""

    JSON_SCHEMA = 0
    JSON_MODE = 1
    TOOL_CALL = 2
    TEXT = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    def next_down(self) -> OutputMode | None:
        return OutputMode(self + 1) if self < OutputMode.TEXT else None


MODE_BY_LABEL = {mode.label: mode for mode in OutputMode}

_TOOL_NAME = "submit_verdict"
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


class AnswerFormatError(ValueError):
    """The judge's reply held no JSON object at all (as opposed to a JSON object of the wrong shape)."""


@functools.lru_cache(maxsize=512)
def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent to the judge; pydantic's, without titles (they only cost tokens).

    Cached per schema class: generating it costs more than the rest of a judge call's own work. Callers
    must not mutate the returned dict.
    """
    stripped: dict[str, Any] = _strip_titles(model.model_json_schema())
    return stripped


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def request_options(mode: OutputMode, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The extra ``acompletion`` keyword arguments that ask for structured output in ``mode``."""
    if mode is OutputMode.JSON_SCHEMA:
        return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}}
    if mode is OutputMode.JSON_MODE:
        return {"response_format": {"type": "json_object"}}
    if mode is OutputMode.TOOL_CALL:
        tool = {
            "type": "function",
            "function": {"name": _TOOL_NAME, "description": "Record the verdict.", "parameters": schema},
        }
        # litellm routes any request with tools through its MCP gateway check, which imports the optional
        # ``mcp`` package; a judge's single local function needs none of that, so skip the check.
        return {
            "tools": [tool],
            "tool_choice": {"type": "function", "function": {"name": _TOOL_NAME}},
            "_skip_mcp_handler": True,
        }
    return {}


def reply_text(message: Any) -> str:
    """The raw text of a reply: tool-call arguments when present, else the message content."""
    for call in getattr(message, "tool_calls", None) or ():
        function = getattr(call, "function", None)
        arguments = getattr(function, "arguments", None)
        if isinstance(arguments, str) and arguments.strip():
            return arguments
        if isinstance(arguments, dict):
            return json.dumps(arguments)
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""


def parse_verdict(text: str, schema: type[VerdictT]) -> VerdictT:
    """Validate the judge's reply against ``schema``.

    Tries the whole text first, then every JSON object embedded in it, in
    order. Raises ``AnswerFormatError`` when no JSON object is found and
    pydantic's ``ValidationError`` (of the first object) when objects were
    found but none fits.
    """
    whole = _loads(text)
    if isinstance(whole, dict):
        try:
            return schema.model_validate(whole)
        except ValidationError:
            pass  # maybe a better candidate is nested or follows; the scan below reports the first error
    first_error: ValidationError | None = None
    for candidate in _json_candidates(text):
        try:
            return schema.model_validate(candidate)
        except ValidationError as exc:
            first_error = first_error or exc
    if first_error is not None:
        raise first_error
    raise AnswerFormatError(f"no JSON object in the judge's reply ({len(text)} characters)")


def _json_candidates(text: str) -> list[Any]:
    """Every JSON object found in ``text``: the whole text, then objects starting at each ``{``."""
    cleaned = _THINK_BLOCK.sub("", text).strip()
    found: list[Any] = []
    whole = _loads(cleaned)
    if isinstance(whole, dict):
        found.append(whole)
    decoder = json.JSONDecoder()
    position = cleaned.find("{")
    while position != -1 and len(found) < 8:
        try:
            value: Any = decoder.raw_decode(cleaned, position)[0]
        except json.JSONDecodeError:
            value = _repair(cleaned[position:])
        if isinstance(value, dict) and value not in found:
            found.append(value)
        position = cleaned.find("{", position + 1)
    return found


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _repair(fragment: str) -> Any:
    """Salvage the commonest judge mistake, trailing commas, within the balanced object at the start."""
    end = _balanced_end(fragment)
    if end is None:
        return None
    return _loads(_TRAILING_COMMA.sub(r"\1", fragment[:end]))


def _balanced_end(fragment: str) -> int | None:
    depth, in_string, escaped = 0, False, False
    for index, char in enumerate(fragment):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None
