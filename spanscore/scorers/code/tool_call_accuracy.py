"""``tool_call_accuracy``: did the agent call the expected tool (or tools, in order)? Scores 0 or 1.

Single-tool mode (``expected_tool``): lenient passes when the tool was called
at all, strict (``strict_mode``) only when it was the one and only call.
Order mode (``expected_tool_order``, which takes precedence): lenient needs
each expected tool's first call to come after the previous one's, extra tools
allowed; strict needs exactly that sequence. A run without tool calls scores
0: the expected tool was not called. The tool calls are ``Run.all_tool_calls``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanscore.scorers.base import MissingInput, Scorer, StepContext, create_scorer
from spanscore.scorers.code.options import optional_str, optional_str_list, require_bool
from spanscore.scorers.registry import register

VERSION = "1"


def tools_in_order(actual: Sequence[str], expected: Sequence[str], strict: bool) -> bool:
    """True when ``actual`` follows ``expected`` (exactly when strict; by first occurrences otherwise)."""
    if strict:
        return list(actual) == list(expected)
    previous = -1
    for tool in expected:
        try:
            index = actual.index(tool)
        except ValueError:
            return False
        if index <= previous:
            return False
        previous = index
    return True


def called_expected_tool(actual: Sequence[str], expected_tool: str | None, strict: bool) -> bool:
    if not expected_tool:
        return False
    if strict:
        return len(actual) == 1 and actual[0] == expected_tool
    return expected_tool in actual


@register("tool_call_accuracy")
def tool_call_accuracy(
    *,
    expected_tool: str | None = None,
    strict_mode: bool = False,
    expected_tool_order: Sequence[str] | None = None,
) -> Scorer:
    """Build the scorer; ``expected_tool`` or ``expected_tool_order`` is required."""
    expected_tool = optional_str("expected_tool", expected_tool)
    strict = require_bool("strict_mode", strict_mode)
    order = optional_str_list("expected_tool_order", expected_tool_order)
    if not expected_tool and not order:
        raise ValueError("tool_call_accuracy needs the option expected_tool or expected_tool_order")

    def preprocess(context: StepContext) -> dict[str, Any]:
        run = context.run
        if not run.input or not run.output:
            raise MissingInput(
                [name for name in ("input", "output") if not getattr(run, name)], "no input or output messages"
            )
        calls = run.all_tool_calls
        actual = [call.name for call in calls]
        return {
            "expected_tool": expected_tool,
            "actual_tools": actual,
            "strict_mode": strict,
            "expected_tool_order": list(order) if order else None,
            "has_tool_calls": bool(actual),
            "correct_tool_called": called_expected_tool(actual, expected_tool, strict),
            "correct_order_called": tools_in_order(actual, order, strict) if order else None,
            "tool_call_ids": [call.id or str(index) for index, call in enumerate(calls)],
        }

    def generate_score(context: StepContext) -> float:
        step = context.preprocess_result
        if not step["has_tool_calls"]:
            return 0.0
        passed = step["correct_order_called"] if order else step["correct_tool_called"]
        return 1.0 if passed else 0.0

    def generate_reason(context: StepContext) -> str:
        actual = context.preprocess_result["actual_tools"]
        wanted = f"tools in order {list(order)}" if order else f"tool {expected_tool!r}"
        verdict = "called" if context.score == 1.0 else "did not call"
        mode = "strict" if strict else "lenient"
        return f"the agent {verdict} the expected {wanted} ({mode}); calls made: {actual or 'none'}"

    return (
        create_scorer(
            "tool_call_accuracy",
            version=VERSION,
            description="Whether the expected tool, or tool sequence, was called (0 or 1).",
            requires=("input", "output"),
            targets=("run", "llm", "tool"),
            options={"expected_tool": expected_tool, "strict_mode": strict, "expected_tool_order": order},
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
