"""``summarization``: is the summary both faithful to its source and complete?

The source is the ``source`` option, else the run's input (the text the user
asked to summarise); the summary is the final answer. Preprocess, in two
judge calls: the summary's claims (from the summary alone) and up to
``max_questions`` yes/no questions whose answers the source states (written
from the source alone, so the summary cannot shape them). Analyze, in two
calls: every claim against the source, and every question answered from the
summary alone (the judge never sees the source there, so it cannot fill the
summary's gaps from it). alignment = supported claims / claims asked about,
coverage = answered / questions asked;
score = min(alignment, coverage) x scale, rounded to 2 decimals; 0 when there
are no claims or no questions (the reference's rule).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from spanscore.scorers import MissingInput, Scorer, StepContext
from spanscore.scorers.judge.answer_checks import ItemsExpected
from spanscore.scorers.llm.builder import LlmBuild, judged_scorer
from spanscore.scorers.llm.steps import (
    CombinedJudgeSteps,
    JudgeStep,
    delimit,
    numbered,
    round2,
    scale_option,
)
from spanscore.scorers.llm.verdicts import ClaimVerdict, YesNo, judged_item, judged_list
from spanscore.scorers.wording import agrees, counted

CLAIMS_INSTRUCTIONS = (
    "You list the claims of a summary: each one checkable fact, self-contained (pronouns resolved), in the "
    "summary's own order. Example: 'Ada, a nurse, moved to Oslo.' -> ['Ada is a nurse.', 'Ada moved to Oslo.']"
)
QUESTIONS_INSTRUCTIONS = (
    "You write closed questions about a source text, to test whether a summary kept its main points. Each "
    "question must be answerable with 'yes' from the source alone, name what it asks about (no 'it', 'they'), "
    "and cover one point. Most important points first; never more than the number asked for. Example: source "
    "'The plant closed in 2020 after a flood.' -> 'Did the plant close in 2020?'"
)
CLAIM_CHECK_INSTRUCTIONS = (
    "You check each claim of a summary against its source, in order. 'yes': the source states or directly "
    "implies it (e.g. source 'sales doubled', claim 'sales rose'). 'no': the source contradicts it (claim "
    "'sales fell'). 'unsure': the source does not say (claim 'sales rose because of ads'). Use only the source."
)
QUESTION_CHECK_INSTRUCTIONS = (
    "You answer questions using only a summary. You do not see the original text and must not use outside "
    "knowledge. For each question, in order: 'yes' when the summary itself states the answer (e.g. summary "
    "'The plant shut in 2020.' answers 'Did the plant close in 2020?'), 'no' when the summary is silent, vague "
    "or says otherwise (e.g. 'The plant shut.' does not answer it)."
)


class SummaryClaims(BaseModel):
    claims: list[str]


class SourceQuestions(BaseModel):
    questions: list[str]


QuestionVerdict = judged_item("QuestionVerdict", "question", (str, ""), "answered", YesNo)
ClaimCheck = judged_list("ClaimCheck", "claim_verdicts", ClaimVerdict)
QuestionCheck = judged_list("QuestionCheck", "question_verdicts", QuestionVerdict)


def summarization_score(
    check: Mapping[str, Any], scale: float = 1.0, *, claims_asked: int | None = None, questions_asked: int | None = None
) -> float:
    """min(alignment, coverage) x scale, rounded to 2 decimals; 0 without claims or questions.

    alignment = supported claims / claims asked about, coverage = answered questions / questions asked; the
    verdict counts stand in only when the caller does not know what was asked.
    """
    claims, questions = check.get("claim_verdicts") or [], check.get("question_verdicts") or []
    claim_total = len(claims) if claims_asked is None else claims_asked
    question_total = len(questions) if questions_asked is None else questions_asked
    if claim_total <= 0 or question_total <= 0:
        return 0.0
    alignment = sum(1 for c in claims if c.get("verdict") == "yes") / claim_total
    coverage = sum(1 for q in questions if q.get("answered") == "yes") / question_total
    return round2(min(1.0, alignment, coverage) * scale)


@dataclass(frozen=True)
class _SummaryPrompts:
    """The four prompts, their expectations, score and reason of one configured summarization scorer."""

    source: str | None
    max_questions: int
    scale: float

    def source_text(self, step: StepContext) -> str:
        text = self.source if self.source is not None else step.run.input_text or ""
        if not text.strip():
            raise MissingInput(["input"], "summarization needs the source text: the run's input or the source option")
        return text

    def asked(self, step: StepContext) -> tuple[list[str], list[str]]:
        items = step.preprocess_result or {}
        return items.get("claims") or [], (items.get("questions") or [])[: self.max_questions]

    def claims(self, step: StepContext) -> str | None:
        summary = step.run.output_text or ""
        if not summary.strip():
            return None
        self.source_text(step)  # a run without a source is missing_input before any judge call
        return f"List the claims of this summary.\n\n{delimit('summary', summary)}"

    def questions(self, step: StepContext) -> str | None:
        if not (step.run.output_text or "").strip():
            return None
        return f"Write at most {self.max_questions} questions.\n\n{delimit('source', self.source_text(step))}"

    def claim_check(self, step: StepContext) -> str | None:
        claims, questions = self.asked(step)
        if not claims or not questions:
            return None
        return f"Check each claim.\n\n{delimit('source', self.source_text(step))}\n\n{numbered('claims', claims)}"

    def question_check(self, step: StepContext) -> str | None:
        claims, questions = self.asked(step)
        if not claims or not questions:
            return None
        summary = delimit("summary", step.run.output_text or "")
        return f"Answer each question from the summary alone.\n\n{summary}\n\n{numbered('questions', questions)}"

    def claim_rule(self, step: StepContext) -> list[ItemsExpected]:
        return [ItemsExpected("claim_verdicts", len(self.asked(step)[0]), None, "verdict", ("yes", "no", "unsure"))]

    def question_rule(self, step: StepContext) -> list[ItemsExpected]:
        return [ItemsExpected("question_verdicts", len(self.asked(step)[1]), None, "answered", ("yes", "no"))]

    def score(self, step: StepContext) -> float:
        claims, questions = self.asked(step)
        return summarization_score(
            step.analyze_result or {}, self.scale, claims_asked=len(claims), questions_asked=len(questions)
        )

    def reason(self, step: StepContext) -> str:
        check = step.analyze_result or {}
        claims_asked, questions_asked = self.asked(step)
        if not claims_asked or not questions_asked:
            return f"The score is {step.score} because the summary had no checkable claims or the source no questions."
        supported = sum(1 for c in check.get("claim_verdicts") or [] if c["verdict"] == "yes")
        answered = sum(1 for q in check.get("question_verdicts") or [] if q["answered"] == "yes")
        return (
            f"The score is {step.score}: {supported} of {counted(len(claims_asked), 'claim')} "
            f"{agrees(supported)} supported by the source and {answered} of "
            f"{counted(len(questions_asked), 'key question')} {agrees(answered)} "
            "answered by the summary."
        )


@judged_scorer("summarization")
def summarization(
    build: LlmBuild,
    *,
    source: str | None = None,
    max_questions: int = 10,
    scale: float = 1,
) -> Scorer:
    """Faithfulness and coverage of a summary (the answer) of a source (the input, or the ``source`` option)."""
    if isinstance(max_questions, bool) or not isinstance(max_questions, int) or max_questions < 1:
        raise ValueError(f"option max_questions must be an integer of at least 1, got {max_questions!r}")
    if source is not None and not isinstance(source, str):
        raise ValueError(f"option source must be a string, got {source!r}")
    prompts = _SummaryPrompts(source, max_questions, scale_option(scale))

    def part(step: str, instructions: str, schema: type[BaseModel], prompt: Any, empty: Any, expect: Any) -> JudgeStep:
        return build.step(
            step=step,
            instructions=instructions,
            schema=schema,
            prompt=prompt,
            when_empty=lambda _: empty,
            expect=expect,
        )

    scorer = build.scorer(
        description="Faithfulness (claims supported) and coverage (key questions answered) of a summary.",
        requires=("output",),
        options={"max_questions": max_questions, "scale": prompts.scale},
    )
    preprocess = CombinedJudgeSteps(
        part("preprocess", CLAIMS_INSTRUCTIONS, SummaryClaims, prompts.claims, {"claims": []}, None),
        part("preprocess", QUESTIONS_INSTRUCTIONS, SourceQuestions, prompts.questions, {"questions": []}, None),
    )
    analyze = CombinedJudgeSteps(
        part(
            "analyze",
            CLAIM_CHECK_INSTRUCTIONS,
            ClaimCheck,
            prompts.claim_check,
            {"claim_verdicts": []},
            prompts.claim_rule,
        ),
        part(
            "analyze",
            QUESTION_CHECK_INSTRUCTIONS,
            QuestionCheck,
            prompts.question_check,
            {"question_verdicts": []},
            prompts.question_rule,
        ),
    )
    return scorer.preprocess(preprocess).analyze(analyze).generate_score(prompts.score).generate_reason(prompts.reason)
