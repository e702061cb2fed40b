"""Structured-output modes of the judge and how to read a verdict out of each.

The judge client asks every model for JSON in the strongest way the model
accepts and steps down a ladder when the model refuses a mode: JSON schema
(``response_format: json_schema``) -> JSON mode (``json_object``) -> a forced
tool call whose arguments are the verdict -> plain text. Whatever the mode,
the answer is read tolerantly: code fences, a reasoning preamble or prose
around the object do not matter, and the last top-level JSON object that
validates against the step's pydantic schema wins. Validation itself stays strict.
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

    The whole text first; failing that, every top-level JSON object embedded
    in it, and the LAST one that validates wins: a judge that quotes an
    example verdict (or its first draft) before its own answer is scored on
    its own answer. Raises ``AnswerFormatError`` when no JSON object is found
    and pydantic's ``ValidationError`` (of the last object) when objects were
    found but none fits.
    """
    whole = _loads(text)
    if isinstance(whole, dict):
        try:
            return schema.model_validate(whole)
        except ValidationError:
            pass  # maybe a better candidate is nested in prose; the scan below reports the error
    last_error: ValidationError | None = None
    for nested in (False, True):  # objects wrapped in another object only when no top-level one fits
        chosen: VerdictT | None = None
        for candidate in _json_candidates(text, nested=nested):
            try:
                chosen = schema.model_validate(candidate)
            except ValidationError as exc:
                last_error = exc
        if chosen is not None:
            return chosen
    if last_error is not None:
        raise last_error
    raise AnswerFormatError(f"no JSON object in the judge's reply ({len(text)} characters)")


_MAX_CANDIDATES = 64


def _json_candidates(text: str, *, nested: bool = False) -> list[Any]:
    """The JSON objects in ``text``, in order: top-level ones only, or with ``nested`` every object."""
    cleaned = _THINK_BLOCK.sub("", text).strip()
    whole = _loads(cleaned)
    if isinstance(whole, dict) and not nested:
        return [whole]
    found: list[Any] = []
    decoder = json.JSONDecoder()
    position = cleaned.find("{")
    while position != -1 and len(found) < _MAX_CANDIDATES:
        end: int | None
        try:
            value, end = decoder.raw_decode(cleaned, position)
        except json.JSONDecodeError:
            value, end = _repair(cleaned[position:])
            end = None if end is None else position + end
        if isinstance(value, dict):
            found.append(value)
        skip_inside = not nested and end is not None and isinstance(value, dict)
        position = cleaned.find("{", end if skip_inside and end is not None else position + 1)
    return found


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _repair(fragment: str) -> tuple[Any, int | None]:
    """Salvage the commonest judge mistake, trailing commas, within the balanced object at the start.

    Returns the value (``None`` when beyond repair) and where the balanced object ends.
    """
    end = _balanced_end(fragment)
    if end is None:
        return None, None
    return _loads(_TRAILING_COMMA.sub(r"\1", fragment[:end])), end


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
