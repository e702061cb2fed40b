"""Session scorers with a judge: relevancy, knowledge retention, goal completion and user frustration.

They read ``Run.turns`` of a session view (``target: session``) and show the
judge the whole conversation as numbered turns (user message, tool calls,
answer). One judge call each; every list the judge returns is checked against
the number of turns it had to judge (``ItemsExpected``), so a judge that skips
or invents a turn is retried, never trusted.

* ``conversation_relevancy``: per answered turn, is the answer relevant to what
  the user asked in that turn, given the history (yes / unsure / no)?
  score = (yes + uncertainty_weight x unsure) / answered turns x scale.
* ``knowledge_retention``: per answered turn from the second on, does the
  agent keep what the user already said (``kept``) or ask for it again,
  contradict it or ignore it (``forgot``)? score = kept / judged turns x scale;
  a one-turn session scores 1 (nothing to forget).
* ``conversation_goal_completion``: the judge lists the user's goals and marks
  each ``achieved`` / ``partial`` / ``not_achieved``; score = (achieved + 0.5 x
  partial) / goals x scale; no goal found -> ``not_applicable``.
* ``user_frustration``: per user message, does it show frustration (repeating
  the request, complaining, giving up)? score = frustrated messages / user
  messages x scale; lower is better.

Scores round to two decimals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from spanscore.run import Turn
from spanscore.scorers import NotApplicable, Scorer, StepContext
from spanscore.scorers.base import session_turns
from spanscore.scorers.judge.answer_checks import ItemsExpected
from spanscore.scorers.llm.builder import LlmBuild, judged_scorer
from spanscore.scorers.llm.steps import as_json, delimit, round2, scale_option
from spanscore.scorers.llm.verdicts import YesNo, YesNoUnsure, judged_item, judged_list
from spanscore.scorers.wording import counted

SESSION = ("session",)

RELEVANCY_INSTRUCTIONS = (
    "You read a conversation between a user and an AI agent, turn by turn. For every turn that has an answer, in "
    "order, give one verdict: 'yes' when the answer addresses what the user asked in that turn, read with the "
    "conversation so far (a follow-up 'and tomorrow?' after a weather question asks for tomorrow's weather); "
    "'unsure' when it is partly relevant or vague; 'no' when it ignores the request or talks about something else. "
    "Quote the turn number and give a one-sentence reason."
)
RETENTION_INSTRUCTIONS = (
    "You read a conversation between a user and an AI agent, turn by turn. For every answered turn from the second "
    "on, in order, decide whether the agent kept what the user had already told it earlier in the conversation: "
    "'kept' when it uses or at least does not contradict that information; 'forgot' when it asks again for "
    "something the user already gave (a name, a date, an order number), contradicts it, or ignores a preference the "
    "user stated. Give the turn number and a one-sentence reason."
)
GOAL_INSTRUCTIONS = (
    "You read a conversation between a user and an AI agent. List what the user came to get done (their goals, "
    "one short phrase each, only goals the user expressed), and for each say whether the conversation achieved it: "
    "'achieved' when the user got what they asked for; 'partial' when they got part of it or a workaround; "
    "'not_achieved' when they did not. Give a one-sentence reason for each."
)
FRUSTRATION_INSTRUCTIONS = (
    "You read a conversation between a user and an AI agent. For every user message, in order, decide whether it "
    "shows frustration with the agent: 'yes' when the user repeats or rephrases a request the agent failed, "
    "complains, uses exasperated language, or gives up; 'no' otherwise (a plain question or thanks). Give the turn "
    "number and a one-sentence reason."
)


TurnVerdict = judged_item("TurnVerdict", "turn", (int, Field(ge=1)), "verdict", YesNoUnsure)
TurnVerdicts = judged_list("TurnVerdicts", "verdicts", TurnVerdict)
RetentionVerdict = judged_item("RetentionVerdict", "turn", (int, Field(ge=1)), "verdict", Literal["kept", "forgot"])
RetentionVerdicts = judged_list("RetentionVerdicts", "verdicts", RetentionVerdict)
Goal = judged_item("Goal", "goal", (str, ...), "outcome", Literal["achieved", "partial", "not_achieved"])
Goals = judged_list("Goals", "goals", Goal)
FrustrationVerdict = judged_item("FrustrationVerdict", "turn", (int, Field(ge=1)), "verdict", YesNo)
FrustrationVerdicts = judged_list("FrustrationVerdicts", "verdicts", FrustrationVerdict)


def transcript(turns: Sequence[Turn]) -> str:
    """The conversation as numbered turns, each with the user's message, the tool calls and the answer."""
    lines = []
    for number, turn in enumerate(turns, start=1):
        lines.append(f"[turn {number}]")
        lines.append(f"user: {turn.user if turn.user is not None else '(no message recorded)'}")
        for call in turn.tool_calls:
            lines.append(f"tool call: {call.name}({as_json(call.arguments)})")
        lines.append(f"agent: {turn.answer if turn.answer is not None else '(no answer recorded)'}")
    return delimit("conversation", "\n".join(lines))


def answered(turns: Sequence[Turn], start: int = 0) -> list[int]:
    """1-based numbers of the turns from ``start`` that have an answer."""
    return [number for number, turn in enumerate(turns, start=1) if number > start and turn.answer]


def asked(turns: Sequence[Turn]) -> list[int]:
    """1-based numbers of the turns that have a user message."""
    return [number for number, turn in enumerate(turns, start=1) if turn.user]


def conversation_relevancy_score(
    verdicts: Sequence[dict[str, Any]], *, uncertainty_weight: float = 0.3, scale: float = 1.0
) -> float:
    if not verdicts:
        return round2(scale)
    points = sum(1.0 if v["verdict"] == "yes" else uncertainty_weight if v["verdict"] == "unsure" else 0.0
                 for v in verdicts)  # fmt: skip
    return round2(points / len(verdicts) * scale)


def knowledge_retention_score(verdicts: Sequence[dict[str, Any]], *, scale: float = 1.0) -> float:
    if not verdicts:
        return round2(scale)
    return round2(sum(1 for v in verdicts if v["verdict"] == "kept") / len(verdicts) * scale)


def goal_completion_score(goals: Sequence[dict[str, Any]], *, scale: float = 1.0) -> float:
    if not goals:
        raise NotApplicable("the judge found no goal the user expressed")
    points = sum(1.0 if g["outcome"] == "achieved" else 0.5 if g["outcome"] == "partial" else 0.0 for g in goals)
    return round2(points / len(goals) * scale)


def frustration_score(verdicts: Sequence[dict[str, Any]], *, scale: float = 1.0) -> float:
    if not verdicts:
        return 0.0
    return round2(sum(1 for v in verdicts if v["verdict"] == "yes") / len(verdicts) * scale)


def _per_turn(
    build: LlmBuild,
    description: str,
    instructions: str,
    schema: type[BaseModel],
    judged: Any,
    score: Any,
    *,
    higher_is_better: bool,
    options: dict[str, Any],
    what: str,
) -> Scorer:
    """A scorer whose judge gives one verdict per judged turn (``judged(turns)`` numbers them)."""

    def prompt(step: StepContext) -> str | None:
        numbers = judged(session_turns(step))
        if not numbers:
            return None
        listed = ", ".join(map(str, numbers))
        return f"{transcript(session_turns(step))}\n\nJudge {what} of these turns, in this order: {listed}."

    def analyze_empty(step: StepContext) -> dict[str, Any]:
        return {"verdicts": []}

    def generate_score(step: StepContext) -> float:
        return float(score(step.analyze_result["verdicts"]))

    def generate_reason(step: StepContext) -> str:
        verdicts = step.analyze_result["verdicts"]
        if not verdicts:
            return f"The score is {step.score}: no turn to judge."
        notes = "; ".join(f"turn {v['turn']}: {v['verdict']} ({v['reason']})" for v in verdicts[:6] if v.get("reason"))
        return f"The score is {step.score} over {counted(len(verdicts), 'turn')}. {notes}".strip()

    analyze = build.step(
        "analyze",
        instructions,
        schema,
        prompt,
        when_empty=analyze_empty,
        expect=lambda step: [ItemsExpected("verdicts", len(judged(session_turns(step))))],
    )
    scorer = build.scorer(
        description=description,
        requires=("turns",),
        higher_is_better=higher_is_better,
        options=options,
        targets=SESSION,
    )
    return scorer.analyze(analyze).generate_score(generate_score).generate_reason(generate_reason)


@judged_scorer("conversation_relevancy", per_step=False)
def conversation_relevancy(
    build: LlmBuild,
    *,
    uncertainty_weight: float = 0.3,
    scale: float = 1.0,
) -> Scorer:
    """Share of answers relevant to their turn, given the conversation so far."""
    weight, scale = float(uncertainty_weight), scale_option(scale)
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"option uncertainty_weight must be between 0 and 1, got {uncertainty_weight!r}")
    return _per_turn(
        build,
        "Share of the agent's answers relevant to their turn, given the conversation so far.",
        RELEVANCY_INSTRUCTIONS,
        TurnVerdicts,
        answered,
        lambda verdicts: conversation_relevancy_score(verdicts, uncertainty_weight=weight, scale=scale),
        higher_is_better=True,
        options={"uncertainty_weight": weight, "scale": scale},
        what="the answer",
    )


@dataclass(frozen=True, slots=True)
class _Judged:
    """A per-turn scorer with no option but ``scale``: what it judges and how its verdicts score."""

    description: str
    instructions: str
    schema: type[BaseModel]
    judged: Callable[[Sequence[Turn]], list[int]]
    score: Callable[..., float]
    higher_is_better: bool
    what: str


_SCALE_ONLY = {
    "knowledge_retention": _Judged(
        "Share of the agent's later answers that keep what the user already told it.",
        RETENTION_INSTRUCTIONS,
        RetentionVerdicts,
        lambda turns: answered(turns, start=1),
        knowledge_retention_score,
        True,
        "the answer",
    ),
    "user_frustration": _Judged(
        "Share of the user's messages that show frustration with the agent (lower is better).",
        FRUSTRATION_INSTRUCTIONS,
        FrustrationVerdicts,
        asked,
        frustration_score,
        False,
        "the user message",
    ),
}


def _scale_only(build: LlmBuild, *, scale: float = 1.0) -> Scorer:
    """Knowledge retention or user frustration, told apart by the registered name (``_SCALE_ONLY``)."""
    kind, scale = _SCALE_ONLY[build.scorer_id], scale_option(scale)
    return _per_turn(
        build,
        kind.description,
        kind.instructions,
        kind.schema,
        kind.judged,
        lambda verdicts: kind.score(verdicts, scale=scale),
        higher_is_better=kind.higher_is_better,
        options={"scale": scale},
        what=kind.what,
    )


knowledge_retention = judged_scorer("knowledge_retention", per_step=False)(_scale_only)
user_frustration = judged_scorer("user_frustration", per_step=False)(_scale_only)


@judged_scorer("conversation_goal_completion", per_step=False)
def conversation_goal_completion(build: LlmBuild, *, scale: float = 1.0) -> Scorer:
    """Did the user get what they came for: achieved goals (partial counts half) over goals."""
    scale = scale_option(scale)

    def prompt(step: StepContext) -> str:
        return f"{transcript(session_turns(step))}\n\nList the user's goals and whether each was achieved."

    def generate_score(step: StepContext) -> float:
        return goal_completion_score(step.analyze_result["goals"], scale=scale)

    def generate_reason(step: StepContext) -> str:
        goals = step.analyze_result["goals"]
        listed = "; ".join(f"{g['goal']}: {g['outcome'].replace('_', ' ')}" for g in goals[:6])
        return f"The score is {step.score}: {listed}."

    analyze = build.step("analyze", GOAL_INSTRUCTIONS, Goals, prompt)
    scorer = build.scorer(
        description="Whether the user got what they came for over the whole conversation.",
        requires=("turns",),
        options={"scale": scale},
        targets=SESSION,
    )
    return scorer.analyze(analyze).generate_score(generate_score).generate_reason(generate_reason)
