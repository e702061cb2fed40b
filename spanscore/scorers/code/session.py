"""Session scorers without a judge: ``turn_count``, ``tool_calls_per_turn``, ``repeated_tool_calls``.

They read ``Run.turns`` of a session view (``target: session``): the session's
runs in start order, each with its user message, answer and tool calls.

* ``turn_count``: the number of turns. A count, lower is better (a user who
  needs more turns for the same task is working harder).
* ``tool_calls_per_turn``: total tool calls / turns. Lower is better; the
  reason names the busiest turn.
* ``repeated_tool_calls``: the share of tool calls that repeat an earlier call
  of the same tool with the same arguments in the same turn (with
  ``across_turns``, anywhere earlier in the session): an agent going round in
  a loop. 0 when there are no tool calls. Arguments are compared in one
  spelling (JSON with sorted keys), so ``{"a":1,"b":2}`` and ``{"b":2,"a":1}``
  are the same call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from spanscore.run import ToolCall
from spanscore.scorers.base import Scorer, StepContext, create_scorer, session_turns
from spanscore.scorers.code.options import require_bool
from spanscore.scorers.registry import register
from spanscore.scorers.wording import counted

SESSION = ("session",)


def call_key(call: ToolCall) -> tuple[str, str]:
    """A tool call's identity for repeat detection: its name and its arguments in one spelling."""
    arguments = call.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes: compare as text
            return call.name, arguments.strip()
    return call.name, json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def repeated_calls(turns: Sequence[Sequence[ToolCall]], across_turns: bool = False) -> list[tuple[int, ToolCall]]:
    """The calls that repeat an earlier identical call (same turn, or anywhere before with ``across_turns``)."""
    repeats: list[tuple[int, ToolCall]] = []
    seen_in_session: set[tuple[str, str]] = set()
    for index, calls in enumerate(turns):
        seen = set(seen_in_session) if across_turns else set()
        for call in calls:
            key = call_key(call)
            if key in seen:
                repeats.append((index, call))
            seen.add(key)
            seen_in_session.add(key)
    return repeats


@register("turn_count")
def turn_count() -> Scorer:
    """The number of turns in the session."""

    def generate_score(context: StepContext) -> float:
        return float(len(session_turns(context)))

    def generate_reason(context: StepContext) -> str:
        turns = session_turns(context)
        unanswered = sum(1 for turn in turns if not turn.answer)
        extra = f", {unanswered} without an answer" if unanswered else ""
        return f"{counted(len(turns), 'turn')}{extra}."

    return (
        create_scorer(
            "turn_count",
            description="How many turns the conversation took.",
            requires=("turns",),
            higher_is_better=False,
            targets=SESSION,
        )
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )


@register("tool_calls_per_turn")
def tool_calls_per_turn() -> Scorer:
    """Tool calls per turn, over the session."""

    def preprocess(context: StepContext) -> dict[str, Any]:
        return {"per_turn": [len(turn.tool_calls) for turn in session_turns(context)]}

    def generate_score(context: StepContext) -> float:
        per_turn: list[int] = context.preprocess_result["per_turn"]
        return round(sum(per_turn) / len(per_turn), 4)

    def generate_reason(context: StepContext) -> str:
        per_turn: list[int] = context.preprocess_result["per_turn"]
        busiest = max(range(len(per_turn)), key=lambda i: per_turn[i])
        return (
            f"{counted(sum(per_turn), 'tool call')} over {counted(len(per_turn), 'turn')} "
            f"(per turn: {', '.join(map(str, per_turn))}); "
            f"the busiest is turn {busiest + 1}."
        )

    return (
        create_scorer(
            "tool_calls_per_turn",
            description="Mean number of tool calls per turn.",
            requires=("turns",),
            higher_is_better=False,
            targets=SESSION,
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )


@register("repeated_tool_calls")
def repeated_tool_calls(*, across_turns: bool = False) -> Scorer:
    """Share of tool calls that repeat an identical earlier call: loops."""
    across = require_bool("across_turns", across_turns)

    def preprocess(context: StepContext) -> dict[str, Any]:
        turns = [turn.tool_calls for turn in session_turns(context)]
        repeats = repeated_calls(turns, across)
        return {
            "total": sum(len(calls) for calls in turns),
            "repeats": [{"turn": index + 1, "tool": call.name, "arguments": call.arguments} for index, call in repeats],
        }

    def generate_score(context: StepContext) -> float:
        result = context.preprocess_result
        return round(len(result["repeats"]) / result["total"], 4) if result["total"] else 0.0

    def generate_reason(context: StepContext) -> str:
        result = context.preprocess_result
        if not result["repeats"]:
            return f"No repeated tool call among {result['total']}."
        listed = "; ".join(f"{r['tool']} again in turn {r['turn']}" for r in result["repeats"][:5])
        return f"{len(result['repeats'])} of {result['total']} tool calls repeat an identical earlier call: {listed}."

    return (
        create_scorer(
            "repeated_tool_calls",
            description="Share of tool calls repeating an identical earlier call (same tool, same arguments).",
            requires=("turns",),
            higher_is_better=False,
            targets=SESSION,
            options={"across_turns": across},
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
