"""What one span says about an agent run, whatever dialect said it.

Each dialect extractor turns the attributes it recognises into a ``SpanFacts``;
the precedence module merges the facts of all dialects for one span field by
field (first dialect that has a value wins) and the run assembler combines the
facts of a run's spans. Every value carries the attribute it came from, so a
run can say which convention supplied each field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace

from spanscore.collector.conventions.parsing import is_blank
from spanscore.run import Message, ToolCall, ToolSpec

SpanKind = str
"""``agent``, ``llm``, ``tool``, ``retriever``, ``chain`` or ``embedding``."""


@dataclass(slots=True)
class SpanFacts:
    """Optional facts about one span; ``None`` means the dialect did not say."""

    kind: SpanKind | None = None
    agent_name: str | None = None
    agent_label: str | None = None
    """A name guessed from an agent span's own name when no attribute names the agent (OpenInference
    wrappers such as the OpenAI Agents SDK's ``Agent workflow``); any span's ``agent_name`` beats it."""
    input: tuple[Message, ...] | None = None
    output: tuple[Message, ...] | None = None
    system: str | None = None
    tool: ToolCall | None = None
    tools: tuple[ToolSpec, ...] | None = None
    """The tools offered to the model on an LLM call (``tool_definitions``)."""
    documents: tuple[str, ...] | None = None
    model: str | None = None
    provider: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None
    finish_reason: str | None = None
    """Why a model call stopped, in ``finish.canonical`` spelling (``stop``, ``length``, ``content_filter``)."""
    tool_results: dict[str, str] = field(default_factory=dict)
    """Tool results the model was shown (tool-role messages), by tool call id."""
    sources: dict[str, str] = field(default_factory=dict)

    def put(self, name: str, value: object, source: str) -> None:
        """Set ``name`` to ``value`` unless it is already set, ``value`` is None, or it is blank messages.

        Blank messages (a role without text or tool calls) say nothing, so a later, lower-precedence
        source with the real text still fills the field.
        """
        if value is None or getattr(self, name) is not None:
            return
        if name in ("input", "output") and is_blank(value):  # type: ignore[arg-type]
            return
        setattr(self, name, value)
        self.sources[name] = source

    def merge(self, other: SpanFacts) -> None:
        """Fill this span's missing facts from ``other`` (a lower-precedence dialect).

        One exception to "first wins": an agent name that is an opaque identifier (``is_opaque_identifier``)
        gives way to a real name from a lower-precedence dialect (CrewAI's ``gen_ai.agent.name`` is the
        agent's key, ``crewai.agent.role`` its name).
        """
        for key, result in other.tool_results.items():
            self.tool_results.setdefault(key, result)
        # Every dialect's facts are merged into every span's that may carry some, and most dialects say nothing
        # of a given span: the field names are listed once, and a field the other did not set costs one getattr.
        for name in _MERGED_FIELDS:
            value = getattr(other, name)
            if value is None:
                continue
            if name == "tool" and self.tool is not None:
                self.tool = fill_tool(self.tool, value)
                continue
            if name == "agent_name" and _names_what_we_only_identify(self.agent_name, value):
                self.agent_name = None
            self.put(name, value, other.sources.get(name, ""))


_MERGED_FIELDS = tuple(item.name for item in fields(SpanFacts) if item.name not in ("sources", "tool_results"))
"""The facts ``SpanFacts.merge`` fills one by one, in their order."""


_OPAQUE = re.compile(r"[0-9a-f]{16,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
"""A hex digest (16 hex digits or more) or a UUID: an id a framework made up, not a name anyone gave."""


def is_opaque_identifier(name: str) -> bool:
    """Whether an agent name is a generated identifier (``a3a24ae5ded50b9bea4f8e5e9e3fdd75``), not a name."""
    return _OPAQUE.fullmatch(name.strip()) is not None


def _names_what_we_only_identify(mine: str | None, theirs: str | None) -> bool:
    return mine is not None and theirs is not None and is_opaque_identifier(mine) and not is_opaque_identifier(theirs)


def fill_tool(mine: ToolCall, theirs: ToolCall) -> ToolCall:
    """One tool call described twice (two dialects on one span, or two nested spans): keep ours, fill what we lack."""
    if mine.name != theirs.name:
        return mine
    return replace(
        mine,
        arguments=mine.arguments if mine.arguments is not None else theirs.arguments,
        result=mine.result if mine.result is not None else theirs.result,
        id=mine.id if mine.id is not None else theirs.id,
        error=mine.error if mine.error is not None else theirs.error,
    )
