"""The canonical agent run: what scorers read, whatever dialect the spans spoke.

The collector's normalizer builds a ``Run`` from a trace's spans; library users
build one by hand (``Run(input="...", output="...")``). A field that is ``None``
is *missing* (the spans never carried it), which is different from an empty
string that the agent really sent. Scorers declare the fields they need and a
run lacking one is reported as ``missing_input``, never scored as if empty.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spanscore.answer import answer_text
from spanscore.slots_pickle import pickled_by_slots

MessagesLike = str | Mapping[str, Any] | Sequence[Any] | None

TARGETS = ("run", "llm", "tool", "retrieval", "session")
"""What a rule can score: an agent run, one LLM call, one tool execution, one retrieval, or a conversation."""
SPAN_TARGETS = ("llm", "tool", "retrieval")
"""Targets that are one span inside a run."""


@pickled_by_slots
@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool invocation, in the order the agent made it."""

    name: str
    arguments: Mapping[str, Any] | str | None = None
    result: str | None = None
    id: str | None = None
    order: int = 0
    error: str | None = None
    """Set when the tool's span ended with an error status (its status message, else ``"error"``)."""

    @classmethod
    def coerce(cls, value: ToolCall | Mapping[str, Any] | str, order: int) -> ToolCall:
        """Accept a ToolCall, a plain tool name or a dict with name/arguments/result."""
        if isinstance(value, ToolCall):
            return value
        if isinstance(value, str):
            return cls(name=value, order=order)
        name = value.get("name") or value.get("toolName") or value.get("tool_name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tool_calls[{order}]: a tool call needs a non-empty 'name', got {dict(value)!r}")
        result = value.get("result")
        if result is not None and not isinstance(result, str):
            result = json.dumps(result, ensure_ascii=False, sort_keys=True)
        args = value.get("arguments", value.get("args"))
        error = value.get("error")
        return cls(
            name=name,
            arguments=args,
            result=result,
            id=value.get("id"),
            order=int(value.get("order", order)),
            error=None if error is None else str(error),
        )


@pickled_by_slots
@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model was offered on an LLM call: its name, description and JSON Schema parameters."""

    name: str
    description: str | None = None
    parameters: Mapping[str, Any] | None = None

    @classmethod
    def coerce(cls, value: ToolSpec | Mapping[str, Any] | str) -> ToolSpec:
        """Accept a ToolSpec, a plain tool name or a dict with name/description/parameters."""
        if isinstance(value, ToolSpec):
            return value
        if isinstance(value, str):
            return cls(value)
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tools: a tool needs a non-empty 'name', got {dict(value)!r}")
        return cls(name, value.get("description"), value.get("parameters"))


@pickled_by_slots
@dataclass(frozen=True, slots=True)
class Message:
    """One chat message; ``content`` is the text, tool calls ride along."""

    role: str
    content: str
    tool_calls: tuple[ToolCall, ...] = ()

    @classmethod
    def coerce(cls, value: Message | Mapping[str, Any] | str, default_role: str) -> Message:
        if isinstance(value, Message):
            return value
        if isinstance(value, str):
            return cls(role=default_role, content=value)
        role = str(value.get("role") or default_role)
        content = value.get("content", "")
        if not isinstance(content, str):
            content = _text_of_parts(content)
        calls = tuple(ToolCall.coerce(c, i) for i, c in enumerate(value.get("tool_calls") or ()))
        return cls(role=role, content=content, tool_calls=calls)


def _text_of_parts(content: Any) -> str:
    """Join the text parts of a multi-part content value; other parts are skipped."""
    if content is None:
        return ""
    if isinstance(content, Mapping):
        content = [content]
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            text = part.get("text", part.get("content"))
            if isinstance(text, str):
                texts.append(text)
    return "\n".join(texts)


def coerce_messages(value: MessagesLike, default_role: str) -> tuple[Message, ...] | None:
    """Turn plain text, one message or a list of messages into a message tuple; None stays None."""
    if value is None:
        return None
    if isinstance(value, str | Mapping | Message):
        return (Message.coerce(value, default_role),)
    return tuple(Message.coerce(v, default_role) for v in value)


def last_turn(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The messages after the last one that is neither the user's nor the system's (an answer, a tool result).

    A conversation with no such message is one turn, returned whole.
    """
    others = [index for index, message in enumerate(messages) if message.role not in ("user", "system")]
    return messages[others[-1] + 1 :] if others else messages


@pickled_by_slots
@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a conversation: one run of the session, reduced to what session scorers read."""

    run_id: str
    trace_id: str
    span_id: str
    user: str | None
    """The user's message of the turn (``Run.input_text``), None when the run carried none."""
    answer: str | None
    """The agent's answer of the turn (``Run.output_text``), None when the run carried none."""
    tool_calls: tuple[ToolCall, ...] = ()
    start_time_ns: int = 0
    end_time_ns: int = 0
    error: str | None = None
    finish_reason: str | None = None
    """Why the turn's last model call stopped (``Run.finish_reason``)."""

    @classmethod
    def of(cls, run: Run) -> Turn:
        return cls(
            run_id=run.run_id,
            trace_id=run.trace_id,
            span_id=run.span_id,
            user=run.input_text,
            answer=run.output_text,
            tool_calls=run.all_tool_calls,
            start_time_ns=run.start_time_ns,
            end_time_ns=run.end_time_ns,
            error=run.error,
            finish_reason=run.finish_reason,
        )


@pickled_by_slots
@dataclass(frozen=True, slots=True)
class ModelUsage:
    """The tokens of a run's calls to one model, so a run that used several is priced at each one's rates."""

    model: str | None
    provider: str | None
    input_tokens: int = 0
    output_tokens: int = 0


@pickled_by_slots
@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage summed over the run's model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """What the same calls cost as their spans recorded it (spanscore.runs.cost); None when any did not say."""
    by_model: tuple[ModelUsage, ...] = ()
    """The same tokens per model, in order of first use, when the calls named more than one model; else empty."""


@pickled_by_slots
@dataclass(frozen=True, slots=True, init=False)
class Run:
    """One agent run: the unit that sampling decides on and scorers score.

    ``sources`` records, per field, which convention supplied it (for example
    ``{"input": "gen_ai.input.messages"}``) so a surprising score can be traced
    back to the attribute it came from. ``attributes`` are the root span's own
    attributes and ``resource_attributes`` those of the resource that emitted
    it, kept apart so filters can ask for either (``span.X``, ``resource.X``).
    ``trace_state`` is the W3C tracestate of the run's root span as received:
    its ``ot=rv:...`` value, when present, is the randomness
    consistent-probability sampling draws from.

    ``target`` says what the view stands for (``TARGETS``): the whole run, or one
    LLM call, tool execution or retrieval inside it (``run_id`` is then the
    span's id and ``parent_run_id`` the run's), or a session, whose ``turns``
    are its runs in order (``run_id`` is then the session id). ``tools`` are the
    tools the model was offered, on an LLM-call view when its span lists them.
    ``finish_reasons`` says why each of the run's model calls stopped, in the order the calls
    ended (None for a call that did not say), so the last that says is why the answer ended; a run whose
    model calls never said takes its agent span's, and a run with neither has None.
    ``version_attributes`` are what says which version of the agent ran (``service.version``, a prompt's name
    and version...; ``collector.runs.version_attributes``), found on any span of the run or its resource, so
    scores can be compared between versions (docs/compare.md).
    """

    input: tuple[Message, ...] | None
    output: tuple[Message, ...] | None
    system: str | None
    context: tuple[str, ...] | None
    ground_truth: str | None
    tool_calls: tuple[ToolCall, ...] | None
    run_id: str
    trace_id: str
    span_id: str
    model: str | None
    provider: str | None
    agent_name: str | None
    service_name: str | None
    session_id: str | None
    user_id: str | None
    usage: Usage
    error: str | None
    start_time_ns: int
    end_time_ns: int
    attributes: Mapping[str, str]
    resource_attributes: Mapping[str, str]
    sources: Mapping[str, str]
    trace_state: str
    target: str
    turns: tuple[Turn, ...] | None
    parent_run_id: str | None
    tools: tuple[ToolSpec, ...] | None
    finish_reasons: tuple[str | None, ...] | None
    version_attributes: Mapping[str, str]

    def __init__(
        self,
        input: MessagesLike = None,
        output: MessagesLike = None,
        *,
        system: str | Sequence[str] | None = None,
        context: Iterable[str] | None = None,
        ground_truth: str | None = None,
        tool_calls: Iterable[ToolCall | Mapping[str, Any] | str] | None = None,
        run_id: str = "",
        trace_id: str = "",
        span_id: str = "",
        model: str | None = None,
        provider: str | None = None,
        agent_name: str | None = None,
        service_name: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        usage: Usage | None = None,
        error: str | None = None,
        start_time_ns: int = 0,
        end_time_ns: int = 0,
        attributes: Mapping[str, str] | None = None,
        resource_attributes: Mapping[str, str] | None = None,
        sources: Mapping[str, str] | None = None,
        trace_state: str = "",
        target: str = "run",
        turns: Iterable[Turn] | None = None,
        parent_run_id: str | None = None,
        tools: Iterable[ToolSpec | Mapping[str, Any] | str] | None = None,
        finish_reasons: Iterable[str | None] | None = None,
        version_attributes: Mapping[str, str] | None = None,
    ) -> None:
        if target not in TARGETS:
            raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
        setter = object.__setattr__
        setter(self, "input", coerce_messages(input, "user"))
        setter(self, "output", coerce_messages(output, "assistant"))
        if system is not None and not isinstance(system, str):
            system = "\n".join(system)
        setter(self, "system", system)
        setter(self, "context", None if context is None else tuple(str(c) for c in context))
        setter(self, "ground_truth", ground_truth)
        calls = None if tool_calls is None else tuple(ToolCall.coerce(c, i) for i, c in enumerate(tool_calls))
        setter(self, "tool_calls", calls)
        for name, value in (
            ("run_id", run_id or span_id or trace_id),
            ("trace_id", trace_id),
            ("span_id", span_id),
            ("model", model),
            ("provider", provider),
            ("agent_name", agent_name),
            ("service_name", service_name),
            ("session_id", session_id),
            ("user_id", user_id),
            ("usage", usage or Usage()),
            ("error", error),
            ("start_time_ns", start_time_ns),
            ("end_time_ns", end_time_ns),
            ("attributes", dict(attributes or {})),
            ("resource_attributes", dict(resource_attributes or {})),
            ("sources", dict(sources or {})),
            ("trace_state", trace_state),
            ("target", target),
            ("turns", None if turns is None else tuple(turns)),
            ("parent_run_id", parent_run_id),
            ("tools", None if tools is None else tuple(ToolSpec.coerce(t) for t in tools)),
            ("finish_reasons", None if finish_reasons is None else tuple(finish_reasons)),
            ("version_attributes", dict(version_attributes or {})),
        ):
            setter(self, name, value)

    @property
    def input_text(self) -> str | None:
        """The user's side of this turn as one string, or None when missing.

        The user messages after the last assistant or tool message: an input that carries the
        conversation so far (AI SDK callers pass the whole history as ``messages``) is asked the
        last question, and the earlier turns are its history (still in ``input``). An input with
        no user message gives all its text.
        """
        if self.input is None:
            return None
        users = [m.content for m in last_turn(self.input) if m.role == "user"]
        if not users:  # nothing asked after the last answer: the run's user messages, else all its text
            users = [m.content for m in self.input if m.role == "user"] or [m.content for m in self.input]
        return "\n".join(users)

    @property
    def output_text(self) -> str | None:
        """The agent's answer as the run page shows it and every scorer reads it (``spanscore.answer``).

        None when missing.
        """
        return answer_text(self.output)

    @property
    def finish_reason(self) -> str | None:
        """Why the run's last model call that said stopped (``stop``, ``length``, ``content_filter``...), else None.

        A call that reports nothing (a framework's span wrapping the provider call it made) does not hide the
        reason of the call inside it.
        """
        return next((reason for reason in reversed(self.finish_reasons or ()) if reason is not None), None)

    @property
    def all_tool_calls(self) -> tuple[ToolCall, ...]:
        """Tool calls from ``tool_calls`` or, failing that, from the output messages, in order."""
        if self.tool_calls is not None:
            return self.tool_calls
        calls = [c for m in (self.output or ()) for c in m.tool_calls]
        return tuple(calls)

    def missing(self, fields: Iterable[str]) -> list[str]:
        """The names among ``fields`` that this run does not carry."""
        return [name for name in fields if getattr(self, name, None) is None]
