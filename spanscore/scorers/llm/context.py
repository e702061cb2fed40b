"""The retrieval scorers ``context_precision`` and ``context_relevance``, and their shared helpers.

Context is the ``context`` option, else the run's retrieved documents, else
its tool results. A run with no context at all is ``missing_input``.

* context_precision: the judge marks each piece relevant or not for producing
  the answer; score = mean average precision over the pieces in their
  retrieved order (precision at each relevant position, averaged over the
  relevant pieces), x scale; no relevant piece -> 0. [relevant, irrelevant,
  relevant, irrelevant] gives (1 + 2/3) / 2 = 0.83.
* context_relevance: the judge grades each piece high / medium / low / none
  and says whether the answer used it, and lists missing information;
  score = max(0, mean weight - unused-high penalty - capped missing penalty)
  x scale. An empty context list scores 1 x scale; no evaluations score 0
  when something was missing, else 1 (the reference's rules).
* context_recall lives in ``recall.py`` and reuses the helpers here.

Both round to two decimals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from spanscore.scorers import MissingInput, Scorer, StepContext
from spanscore.scorers.judge.answer_checks import ItemsExpected
from spanscore.scorers.llm.builder import LlmBuild, judged_scorer
from spanscore.scorers.llm.steps import (
    Expectation,
    context_option,
    delimit,
    numbered,
    round2,
    run_context,
    scale_option,
)
from spanscore.scorers.llm.verdicts import YesNo, judged_item, judged_list

CONTEXT_TARGETS = ("run", "llm", "retrieval")
"""Scorers that read retrieved context also score one retrieval (its query, its documents, the run's answer)."""
RELEVANCE_WEIGHTS = {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}
NO_CONTEXT = "no context: set the context option, or score runs with retrieved documents or tool results"

PRECISION_INSTRUCTIONS = (
    "You grade retrieved context pieces for a question and its answer. For every piece, by its index: 'yes' = the "
    "piece holds information used in, or needed for, the answer (question 'Capital of France?', piece 'Paris is "
    "France's capital.'); 'no' = it does not help arrive at the answer ('France makes cheese.'). One verdict per "
    "piece, with a one-sentence reason."
)
RELEVANCE_INSTRUCTIONS = (
    "You grade each retrieved context piece, by index, for relevance to the question, and say whether the answer "
    "used it. Question 'What causes solar eclipses?': 'high' = directly answers it ('The Moon blocks the Sun.'); "
    "'medium' = useful supporting detail ('Eclipses last up to 7.5 minutes.'); 'low' = same topic, little help "
    "('The Moon is visible at night.'); 'none' = unrelated ('Stars twinkle.'). was_used: true when the answer "
    "relies on the piece's information. missing_context: information the answer needed but no piece gave (empty "
    "when none). One evaluation per piece."
)


IndexedVerdict = judged_item("IndexedVerdict", "context_index", (int, Field(ge=0)), "verdict", YesNo)
IndexedVerdicts = judged_list("IndexedVerdicts", "verdicts", IndexedVerdict)


class ContextEvaluation(BaseModel):
    context_index: int = Field(ge=0)
    relevance_level: Literal["high", "medium", "low", "none"]
    was_used: bool
    reasoning: str = ""


class RelevanceAnalysis(BaseModel):
    evaluations: list[ContextEvaluation]
    missing_context: list[str] = Field(default_factory=list)
    overall_assessment: str = ""


def mean_average_precision(relevant: Sequence[bool]) -> float:
    """MAP of a ranked list of relevance flags: mean of precision@k at each relevant position; 0 if none."""
    hits, total = 0, 0.0
    for position, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            hits += 1
            total += hits / position
    return total / hits if hits else 0.0


def context_precision_score(verdicts: Sequence[Mapping[str, Any]], scale: float = 1.0) -> float:
    """MAP over the verdicts sorted by ``context_index`` x scale, rounded to 2 decimals."""
    ordered = sorted(verdicts, key=lambda v: int(v.get("context_index", 0)))
    return round2(mean_average_precision([v.get("verdict") == "yes" for v in ordered]) * scale)


def context_relevance_score(
    evaluations: Sequence[Mapping[str, Any]],
    missing_context: Sequence[str] = (),
    *,
    unused_high_relevance_penalty: float = 0.1,
    missing_context_per_item: float = 0.15,
    max_missing_context_penalty: float = 0.5,
    scale: float = 1.0,
) -> float:
    """The weighted relevance formula of the spec (section 1.7), rounded to 2 decimals."""
    if not evaluations:
        return round2((0.0 if missing_context else 1.0) * scale)
    base = sum(RELEVANCE_WEIGHTS[e["relevance_level"]] for e in evaluations) / len(evaluations)
    unused_high = sum(1 for e in evaluations if e["relevance_level"] == "high" and not e["was_used"])
    usage_penalty = unused_high * unused_high_relevance_penalty
    missing_penalty = min(len(missing_context) * missing_context_per_item, max_missing_context_penalty)
    return round2(max(0.0, base - usage_penalty - missing_penalty) * scale)


def documents_of(context: StepContext, configured: tuple[str, ...] | None) -> list[str]:
    documents = run_context(context.run, configured)
    if documents is None:
        raise MissingInput(["context"], NO_CONTEXT)
    return documents


def question_answer(context: StepContext) -> str:
    run = context.run
    return f"{delimit('question', run.input_text or '')}\n\n{delimit('answer', run.output_text or '')}"


def context_scorer(build: LlmBuild, description: str, requires: tuple[str, ...], options: Mapping[str, Any]) -> Scorer:
    """A context scorer: it scores runs and retrieval spans."""
    return build.scorer(description=description, requires=requires, options=options, targets=CONTEXT_TARGETS)


def one_per_piece(configured: tuple[str, ...] | None, field: str, label: str, labels: tuple[str, ...]) -> Expectation:
    """Every context piece judged once, by its ``context_index``, with a label from ``labels``."""

    def expect(step: StepContext) -> list[ItemsExpected]:
        count = len(run_context(step.run, configured) or [])
        return [ItemsExpected(field, count, index_field="context_index", label_field=label, labels=labels)]

    return expect


@judged_scorer("context_precision")
def context_precision(
    build: LlmBuild,
    *,
    context: Sequence[str] | None = None,
    scale: float = 1,
) -> Scorer:
    """Mean average precision of the retrieved context for the answer (rewards relevant pieces ranked early)."""
    configured, scale = context_option(context), scale_option(scale)

    def prompt(step: StepContext) -> str | None:
        documents = documents_of(step, configured)
        if not documents:
            raise MissingInput(["context"], "the context list is empty")
        return f"Grade every context piece.\n\n{question_answer(step)}\n\n{numbered('context', documents)}"

    def generate_score(step: StepContext) -> float:
        return context_precision_score(step.analyze_result["verdicts"], scale)

    def generate_reason(step: StepContext) -> str:
        verdicts = sorted(step.analyze_result["verdicts"], key=lambda v: v["context_index"])
        useful = [str(v["context_index"]) for v in verdicts if v["verdict"] == "yes"]
        where = f"pieces {', '.join(useful)} were useful" if useful else "no piece was useful"
        return f"The score is {step.score} because {where} out of {len(verdicts)} graded (earlier is better)."

    scorer = context_scorer(
        build,
        "Mean average precision of the retrieved context (rewards relevant pieces ranked early).",
        ("input", "output"),
        {"scale": scale, "context": list(configured) if configured else None},
    )
    analyze = build.step(
        "analyze",
        PRECISION_INSTRUCTIONS,
        IndexedVerdicts,
        prompt,
        expect=one_per_piece(configured, "verdicts", "verdict", ("yes", "no")),
    )
    return scorer.analyze(analyze).generate_score(generate_score).generate_reason(generate_reason)


@judged_scorer("context_relevance")
def context_relevance(
    build: LlmBuild,
    *,
    context: Sequence[str] | None = None,
    unused_high_relevance_context: float = 0.1,
    missing_context_per_item: float = 0.15,
    max_missing_context_penalty: float = 0.5,
    scale: float = 1,
) -> Scorer:
    """Graded relevance of the retrieved context, penalising unused relevant pieces and missing information."""
    configured, scale = context_option(context), scale_option(scale)
    penalties = {
        "unused_high_relevance_penalty": _penalty("unused_high_relevance_context", unused_high_relevance_context),
        "missing_context_per_item": _penalty("missing_context_per_item", missing_context_per_item),
        "max_missing_context_penalty": _penalty("max_missing_context_penalty", max_missing_context_penalty),
    }

    def prompt(step: StepContext) -> str | None:
        documents = documents_of(step, configured)
        if not documents:
            return None
        return f"Evaluate every context piece.\n\n{question_answer(step)}\n\n{numbered('context', documents)}"

    def generate_score(step: StepContext) -> float:
        result = step.analyze_result
        if result is None:  # an empty context list: nothing irrelevant was retrieved
            return round2(1.0 * scale)
        return context_relevance_score(result["evaluations"], result["missing_context"], scale=scale, **penalties)

    def generate_reason(step: StepContext) -> str:
        result = step.analyze_result or {"evaluations": [], "missing_context": []}
        levels = ", ".join(f"{e['context_index']}: {e['relevance_level']}" for e in result["evaluations"])
        unused = [
            str(e["context_index"])
            for e in result["evaluations"]
            if e["relevance_level"] == "high" and not e["was_used"]
        ]
        parts = [f"relevance by piece ({levels or 'none graded'})"]
        if unused:
            parts.append(f"highly relevant but unused: {', '.join(unused)}")
        if result["missing_context"]:
            parts.append(f"missing: {'; '.join(result['missing_context'][:3])}")
        return f"The score is {step.score}: " + "; ".join(parts) + "."

    scorer = context_scorer(
        build,
        "Graded relevance and use of the retrieved context, with penalties for unused and missing context.",
        ("input", "output"),
        {"scale": scale, "context": list(configured) if configured else None, **penalties},
    )
    analyze = build.step(
        "analyze",
        RELEVANCE_INSTRUCTIONS,
        RelevanceAnalysis,
        prompt,
        expect=one_per_piece(configured, "evaluations", "relevance_level", tuple(RELEVANCE_WEIGHTS)),
    )
    return scorer.analyze(analyze).generate_score(generate_score).generate_reason(generate_reason)


def _penalty(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"option {name} must be a number between 0 and 1, got {value!r}")
    return float(value)
