"""``summarization``: is the summary both faithful to its source and complete?

The source is the ``source`` option, else the run's input (the text the user
asked to summarise); the summary is the final answer. Preprocess: the judge
lists the summary's claims and writes up to ``max_questions`` yes/no
questions whose answers the source states. Analyze: it checks every claim
against the source and whether the summary answers every question.
alignment = supported claims / claims, coverage = answered / questions;
score = min(alignment, coverage) x scale, rounded to 2 decimals; 0 when there
are no claims or no questions (the reference's rule).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from spanscore.scorers import MissingInput, Scorer, StepContext, create_scorer
from spanscore.scorers.judge import JudgeClient
from spanscore.scorers.llm.steps import (
    JudgeOverride,
    JudgeStep,
    delimit,
    fraction,
    judge_settings,
    numbered,
    round2,
    scale_option,
)
from spanscore.scorers.llm.verdicts import ClaimVerdict, YesNo
from spanscore.scorers.registry import register

EXTRACT_INSTRUCTIONS = (
    "You prepare a summary check. From the summary, list its claims (one fact each). From the source, write "
    "closed questions that the source answers with 'yes' and that a good summary should also answer; cover "
    "the source's most important points first and do not exceed the number of questions asked for."
)
CHECK_INSTRUCTIONS = (
    "You check a summary against its source. For each claim, in order: 'yes' when the source supports it, "
    "'no' when the source contradicts it, 'unsure' when the source does not say. For each question, in order: "
    "'yes' when the summary alone lets a reader answer it, 'no' otherwise."
)


class SummaryItems(BaseModel):
    claims: list[str]
    questions: list[str]


class QuestionVerdict(BaseModel):
    question: str = ""
    answered: YesNo
    reason: str = ""


class SummaryCheck(BaseModel):
    claim_verdicts: list[ClaimVerdict]
    question_verdicts: list[QuestionVerdict] = Field(default_factory=list)


def summarization_score(check: Mapping[str, Any], scale: float = 1.0) -> float:
    """min(alignment, coverage) x scale, rounded to 2 decimals; 0 without claims or questions."""
    claims, questions = check.get("claim_verdicts") or [], check.get("question_verdicts") or []
    if not claims or not questions:
        return 0.0
    alignment = fraction(claims, "verdict", "yes")
    coverage = fraction(questions, "answered", "yes")
    return round2(min(alignment, coverage) * scale)


@register("summarization")
def summarization(
    *,
    model: str | None = None,
    judge: JudgeOverride = None,
    step_judges: Mapping[str, JudgeOverride] | None = None,
    client: JudgeClient | None = None,
    source: str | None = None,
    max_questions: int = 10,
    scale: float = 1,
) -> Scorer:
    """Faithfulness and coverage of a summary (the answer) of a source (the input, or the ``source`` option)."""
    if isinstance(max_questions, bool) or not isinstance(max_questions, int) or max_questions < 1:
        raise ValueError(f"option max_questions must be an integer of at least 1, got {max_questions!r}")
    if source is not None and not isinstance(source, str):
        raise ValueError(f"option source must be a string, got {source!r}")
    settings = judge_settings(model=model, judge=judge, step_judges=step_judges, client=client)
    scale = scale_option(scale)

    def source_text(step: StepContext) -> str:
        text = source if source is not None else step.run.input_text or ""
        if not text.strip():
            raise MissingInput(["input"], "summarization needs the source text: the run's input or the source option")
        return text

    def extract_prompt(step: StepContext) -> str | None:
        summary = step.run.output_text or ""
        if not summary.strip():
            return None
        return (
            f"List the summary's claims and write at most {max_questions} questions about the source.\n\n"
            f"{delimit('source', source_text(step))}\n\n{delimit('summary', summary)}"
        )

    def check_prompt(step: StepContext) -> str | None:
        items = step.preprocess_result or {}
        claims, questions = items.get("claims") or [], (items.get("questions") or [])[:max_questions]
        if not claims or not questions:
            return None
        return (
            "Check the claims against the source and the questions against the summary.\n\n"
            f"{delimit('source', source_text(step))}\n\n{delimit('summary', step.run.output_text or '')}\n\n"
            f"{numbered('claims', claims)}\n\n{numbered('questions', questions)}"
        )

    def generate_score(step: StepContext) -> float:
        return summarization_score(step.analyze_result or {}, scale)

    def generate_reason(step: StepContext) -> str:
        check = step.analyze_result or {}
        claims, questions = check.get("claim_verdicts") or [], check.get("question_verdicts") or []
        if not claims or not questions:
            return f"The score is {step.score} because the summary had no checkable claims or the source no questions."
        supported = sum(1 for c in claims if c["verdict"] == "yes")
        answered = sum(1 for q in questions if q["answered"] == "yes")
        return (
            f"The score is {step.score}: {supported} of {len(claims)} claims are supported by the source and "
            f"{answered} of {len(questions)} key questions are answered by the summary."
        )

    scorer = create_scorer(
        "summarization",
        description="Faithfulness (claims supported) and coverage (key questions answered) of a summary.",
        requires=("output",),
        kind="llm",
        options={"max_questions": max_questions, "scale": scale, "model": settings.config.model},
    )
    preprocess = JudgeStep(
        scorer_id="summarization",
        step="preprocess",
        settings=settings,
        instructions=EXTRACT_INSTRUCTIONS,
        schema=SummaryItems,
        prompt=extract_prompt,
        when_empty=lambda _: {"claims": [], "questions": []},
    )
    analyze = JudgeStep(
        scorer_id="summarization",
        step="analyze",
        settings=settings,
        instructions=CHECK_INSTRUCTIONS,
        schema=SummaryCheck,
        prompt=check_prompt,
        when_empty=lambda _: {"claim_verdicts": [], "question_verdicts": []},
    )
    return (
        scorer.preprocess(preprocess).analyze(analyze).generate_score(generate_score).generate_reason(generate_reason)
    )
