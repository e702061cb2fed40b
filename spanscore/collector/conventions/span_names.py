"""A tool's name read from its span's name, for instrumentations that record the tool in no attribute.

DSPy's OpenInference instrumentation names a tool span after the call it wraps (``get_weather.__call__``)
and sets no ``tool.name``; others name theirs ``Owner.tool`` (an agent's or a class's method,
``weather_agent.get_weather``) or after the GenAI operation (``execute_tool get_weather``). Without a
name no tool call is recorded and ``tool_call_accuracy`` scores a run that called the tool 0, so the
name is taken from the span name when nothing better says it.

A span named after a generic tool class (``FunctionTool.acall``, ``SimpleTool``, ``Tool.__call__``)
says nothing about which tool ran: it gives no name rather than a wrong one.
"""

from __future__ import annotations

import re

_OPERATION = "execute_tool "
_CALL_METHOD = re.compile(r"_*a?(?:run|invoke|call|execute|forward)(?:_[a-z_]*)?_*")
"""A method that runs a tool (``__call__``, ``acall``, ``run``, ``ainvoke``, ``forward``...): the tool is its owner."""
_NAME = re.compile(r"[A-Za-z_][\w-]{0,127}")
_TOOL_CLASS = re.compile(r"(?:[A-Z]\w*)?Tool")
"""A class of tools (``Tool``, ``FunctionTool``, ``SimpleTool``): the kind of a tool, not one tool's name."""


def tool_name_from_span(span_name: str) -> str | None:
    """The tool a tool span's name names, or None when it names none (see the module docstring)."""
    name = span_name.removeprefix(_OPERATION).strip()
    parts = name.split(".")
    if len(parts) > 2:
        return None
    if len(parts) == 2:
        owner, member = parts
        name = owner if _CALL_METHOD.fullmatch(member) else member
    if not _NAME.fullmatch(name) or _TOOL_CLASS.fullmatch(name):
        return None
    return name
