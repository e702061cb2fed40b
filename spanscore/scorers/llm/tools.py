"""``tool_call_accuracy_llm``: were the agent's tool calls the right ones for the request?

Preprocess is code: the tool calls of the run (``Run.all_tool_calls``) with
their arguments. The judge then rates each call appropriate or not given the
user's request and the tools that were available, and lists tools that should
have been called but were not. Score = appropriate calls / evaluated calls,
rounded to 2 decimals (no scale, like the reference). Without evaluations the
score is 1 (asking for clarification instead of calling a tool can be right)
unless the judge names missing tools, then 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from spanscore.scorers import Scorer, StepContext
from spanscore.scorers.judge.answer_checks import ItemsExpected
from spanscore.scorers.llm.builder import LlmBuild, judged_scorer
from spanscore.scorers.llm.steps import as_json, delimit, round2
from spanscore.scorers.wording import counted

TOOL_INSTRUCTIONS = (
    "You audit an agent's tool use. For each tool call, in order, was_appropriate: true when that tool, with those "
    "arguments, is what the user's request needs given the tools available (weather question -> weather tool); "
    "false when it is not, including a tool that could merely help (weather question -> web search). An agent "
    "that called no tool is right when the request was unclear and it asked for clarification, or when no tool "
    "was needed. missing_tools: available tools the request clearly needed but were not called (empty when none)."
)


class ToolEvaluation(BaseModel):
    tool_called: str
    was_appropriate: bool
    reasoning: str = ""


class ToolAnalysis(BaseModel):
    evaluations: list[ToolEvaluation]
    missing_tools: list[str] = Field(default_factory=list)


def tool_call_accuracy_llm_score(evaluations: Sequence[Mapping[str, Any]], missing_tools: Sequence[str] = ()) -> float:
    """Appropriate / evaluated, rounded to 2 decimals; no evaluations -> 0 if tools were missing, else 1."""
    if not evaluations:
        return 0.0 if missing_tools else 1.0
    return round2(sum(1 for e in evaluations if e["was_appropriate"]) / len(evaluations))


def _available(tools: Any) -> tuple[tuple[str, str], ...]:
    if not tools:
        raise ValueError("tool_call_accuracy_llm needs the option available_tools: a list of {name, description}")
    parsed = []
    for index, tool in enumerate(tools):
        name = tool.get("name") or tool.get("id") if isinstance(tool, Mapping) else None
        if not isinstance(name, str) or not name:
            raise ValueError(f"option available_tools[{index}] needs a name, got {tool!r}")
        parsed.append((name, str(tool.get("description", ""))))
    return tuple(parsed)


def _tool_accuracy_preprocess(step: StepContext) -> dict[str, Any]:
    calls = step.run.all_tool_calls
    return {
        "actual_tools": [call.name for call in calls],
        "has_tool_calls": bool(calls),
        "tool_call_infos": [
            {"tool_name": call.name, "tool_call_id": call.id or str(index), "arguments": call.arguments}
            for index, call in enumerate(calls)
        ],
    }


def _tool_accuracy_generate_score(step: StepContext) -> float:
    result = step.analyze_result
    return tool_call_accuracy_llm_score(result["evaluations"], result["missing_tools"])


def _tool_accuracy_generate_reason(step: StepContext) -> str:
    result = step.analyze_result
    wrong = [e["tool_called"] for e in result["evaluations"] if not e["was_appropriate"]]
    parts = [f"{len(result['evaluations']) - len(wrong)} of {counted(len(result['evaluations']), 'call')} appropriate"]
    if wrong:
        parts.append(f"inappropriate: {', '.join(wrong)}")
    if result["missing_tools"]:
        parts.append(f"missing: {', '.join(result['missing_tools'])}")
    return f"The score is {step.score}: " + "; ".join(parts) + "."


@judged_scorer("tool_call_accuracy_llm")
def tool_call_accuracy_llm(
    build: LlmBuild,
    *,
    available_tools: Sequence[Mapping[str, str]],
) -> Scorer:
    """Share of the agent's tool calls a judge finds appropriate for the request."""
    tools = _available(available_tools)

    def prompt(step: StepContext) -> str:
        infos = step.preprocess_result["tool_call_infos"]
        listing = "\n".join(f"- {name}: {description}" for name, description in tools)
        calls = "\n".join(f"[{i}] {info['tool_name']}({as_json(info['arguments'])})" for i, info in enumerate(infos))
        return (
            "Evaluate the agent's tool calls.\n\n"
            f"{delimit('request', step.run.input_text or '')}\n\n{delimit('available_tools', listing)}\n\n"
            f"{delimit('tool_calls', calls or '(no tool was called)')}\n\n"
            f"{delimit('answer', step.run.output_text or '')}"
        )

    scorer = build.scorer(
        description="Share of the agent's tool calls a judge finds appropriate for the request.",
        requires=("input",),
        targets=("run", "llm", "tool"),
        options={"available_tools": [{"name": n, "description": d} for n, d in tools]},
    )
    analyze = build.step(
        step="analyze",
        instructions=TOOL_INSTRUCTIONS,
        schema=ToolAnalysis,
        prompt=prompt,
        expect=lambda step: [ItemsExpected("evaluations", len(step.preprocess_result["tool_call_infos"]))],
    )
    return (
        scorer.preprocess(_tool_accuracy_preprocess)
        .analyze(analyze)
        .generate_score(_tool_accuracy_generate_score)
        .generate_reason(_tool_accuracy_generate_reason)
    )
