"""``answer_relevancy`` and ``answer_similarity``: does the answer address the question / match the expected one?

* answer_relevancy: the judge splits the final answer into statements
  (preprocess) and rates each against the user's question as "yes" (relevant),
  "unsure" (partly) or "no"; score = (yes + uncertainty_weight x unsure) /
  statements x scale, rounded to 2 decimals; no statements -> 0.
* answer_similarity (a CI scorer: needs ``ground_truth``): the judge splits
  answer and ground truth into semantic units, then matches every ground-truth
  unit (exact / semantic / partial / missing) and lists contradictions and
  extra units. Per match: exact = 1 + exact_match_bonus, semantic =
  semantic_threshold, partial = semantic_threshold / 2, missing =
  -missing_penalty; the sum is divided by matches x (1 + bonus), then
  contradictions x contradiction_penalty and min(extras x extra_info_penalty,
  0.2) are subtracted; clamped to [0, 1], x scale, rounded. No matches -> 0.
  Without ground truth the run is ``missing_input`` (``require_ground_truth``,
  the default) or scores 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from spanscore.scorers import Scorer, StepContext
from spanscore.scorers.llm.builder import LlmBuild, judged_scorer
from spanscore.scorers.llm.steps import (
    about_the_answer,
    delimit,
    numbered,
    one_label_each,
    round2,
    scale_option,
)
from spanscore.scorers.llm.verdicts import Statements, YesNoUnsure
from spanscore.scorers.wording import agrees, counted

STATEMENT_INSTRUCTIONS = (
    "You split an assistant's answer into short statements, each carrying one point, keeping enough wording "
    "that each stands on its own. Do not judge them."
)
RELEVANCY_INSTRUCTIONS = (
    "You rate each statement of an answer, in order, for relevance to the user's question (relevance only: a wrong "
    "but on-topic statement is still relevant). Question 'How do I reset my password?': 'yes' = it directly helps "
    "answer this question ('Click Forgot password on the login page.'); 'unsure' = it is about the question's "
    "subject but does not help answer it ('Passwords should be long.'); 'no' = it is about something else ('Our "
    "office opens at 9.'). Use 'unsure' only for that middle case, never because you doubt the statement is "
    "true. One result per statement, with a one-sentence reason."
)
UNITS_INSTRUCTIONS = (
    "You split two texts, an answer and an expected answer, into semantic units: the smallest self-contained "
    "facts or points. Keep each unit close to the original wording."
)
MATCH_INSTRUCTIONS = (
    "You compare an answer with the expected answer. For every expected unit, in order, give the closest answer unit "
    "and a match_type: 'exact' = same content, near-same words ('Paris is the capital' / 'The capital is Paris'); "
    "'semantic' = same meaning, different words ('4' / 'four'); 'partial' = some of it ('red and blue' for 'red, "
    "blue and yellow'); 'missing' = nothing in the answer says it (output_unit null). An answer unit that says the "
    "opposite of an expected unit ('Lyon is the capital' for 'Paris is the capital') is 'missing' for that unit and "
    "is listed under contradictions. List answer units with information the expected answer lacks under "
    "extra_in_output."
)


class RelevancyResult(BaseModel):
    result: YesNoUnsure
    reason: str = ""


class RelevancyResults(BaseModel):
    results: list[RelevancyResult]


class Units(BaseModel):
    output_units: list[str]
    ground_truth_units: list[str]


class UnitMatch(BaseModel):
    ground_truth_unit: str
    output_unit: str | None = None
    match_type: Literal["exact", "semantic", "partial", "missing"]
    explanation: str = ""


class Contradiction(BaseModel):
    output_unit: str
    ground_truth_unit: str
    explanation: str = ""


class SimilarityAnalysis(BaseModel):
    matches: list[UnitMatch]
    extra_in_output: list[str] = Field(default_factory=list)
    contradictions: list[Contradiction] = Field(default_factory=list)


def answer_relevancy_score(
    results: Sequence[Mapping[str, Any]], uncertainty_weight: float = 0.3, scale: float = 1.0
) -> float:
    """(yes + uncertainty_weight x unsure) / results x scale, rounded to 2 decimals; 0 without results."""
    if not results:
        return 0.0
    credit = sum(
        1.0 if r["result"] == "yes" else uncertainty_weight if r["result"] == "unsure" else 0.0 for r in results
    )
    return round2(credit / len(results) * scale)


MATCH_TYPES = ("exact", "semantic", "partial", "missing")


def _unit(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"option {name} must be a non-negative number, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class SimilarityWeights:
    """How ``answer_similarity`` credits and penalises unit matches: its options, with @mastra/evals' defaults.

    Declared once, so the scorer's options and the formula cannot drift apart.
    """

    semantic_threshold: float = 0.8
    exact_match_bonus: float = 0.2
    missing_penalty: float = 0.15
    contradiction_penalty: float = 1.0
    extra_info_penalty: float = 0.05

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            object.__setattr__(self, name, _unit(name, getattr(self, name)))


WEIGHTS = SimilarityWeights()


def answer_similarity_score(
    analysis: Mapping[str, Any], weights: SimilarityWeights = WEIGHTS, *, scale: float = 1.0
) -> float:
    """The unit-matching formula of @mastra/evals 1.10.2 (see the module docstring), rounded to 2 decimals."""
    matches = analysis.get("matches") or []
    if not matches:
        return 0.0
    credit = {
        "exact": 1.0 + weights.exact_match_bonus,
        "semantic": weights.semantic_threshold,
        "partial": weights.semantic_threshold * 0.5,
        "missing": -weights.missing_penalty,
    }
    total = sum(credit[m["match_type"]] for m in matches) / (len(matches) * (1.0 + weights.exact_match_bonus))
    total -= len(analysis.get("contradictions") or []) * weights.contradiction_penalty
    total -= min(len(analysis.get("extra_in_output") or []) * weights.extra_info_penalty, 0.2)
    return round2(min(1.0, max(0.0, total)) * scale)


_relevancy_statements_prompt = about_the_answer("Split this answer into statements.")


def _relevancy_results_prompt(step: StepContext) -> str | None:
    statements = (step.preprocess_result or {}).get("statements") or []
    if not statements:
        return None
    question = step.run.input_text or ""
    return f"Rate each statement.\n\n{delimit('question', question)}\n\n{numbered('statements', statements)}"


def _relevancy_generate_reason(step: StepContext) -> str:
    results = (step.analyze_result or {}).get("results") or []
    counts = {label: sum(1 for r in results if r["result"] == label) for label in ("yes", "unsure", "no")}
    return (
        f"The score is {step.score}: of {counted(len(results), 'statement')}, {counts['yes']} "
        f"{agrees(counts['yes'], 'addresses', 'address')} the question, "
        f"{counts['unsure']} partly, {counts['no']} not at all."
    )


@judged_scorer("answer_relevancy")
def answer_relevancy(
    build: LlmBuild,
    *,
    uncertainty_weight: float = 0.3,
    scale: float = 1,
) -> Scorer:
    """How much of the answer addresses the user's question."""
    weight, scale = _unit("uncertainty_weight", uncertainty_weight), scale_option(scale)

    def generate_score(step: StepContext) -> float:
        return answer_relevancy_score((step.analyze_result or {}).get("results") or [], weight, scale)

    scorer = build.scorer(
        description="How much of the answer addresses the user's question.",
        requires=("input", "output"),
        options={"uncertainty_weight": weight, "scale": scale},
    )
    preprocess = build.step(
        step="preprocess",
        instructions=STATEMENT_INSTRUCTIONS,
        schema=Statements,
        prompt=_relevancy_statements_prompt,
        when_empty=lambda _: {"statements": []},
    )
    analyze = build.step(
        step="analyze",
        instructions=RELEVANCY_INSTRUCTIONS,
        schema=RelevancyResults,
        prompt=_relevancy_results_prompt,
        when_empty=lambda _: {"results": []},
        expect=one_label_each("statements", "results", "result", ("yes", "unsure", "no")),
    )
    return (
        scorer.preprocess(preprocess)
        .analyze(analyze)
        .generate_score(generate_score)
        .generate_reason(_relevancy_generate_reason)
    )


def _similarity_units_prompt(step: StepContext) -> str | None:
    truth = step.run.ground_truth
    if not truth:
        return None
    answer = step.run.output_text or ""
    return f"Split both texts into units.\n\n{delimit('answer', answer)}\n\n{delimit('expected', truth)}"


def _similarity_match_prompt(step: StepContext) -> str | None:
    units = step.preprocess_result or {}
    if not units.get("ground_truth_units"):
        return None
    return (
        "Match every expected unit.\n\n"
        f"{numbered('answer_units', units.get('output_units') or [])}\n\n"
        f"{numbered('expected_units', units['ground_truth_units'])}"
    )


def _similarity_generate_reason(step: StepContext) -> str:
    analysis = step.analyze_result or {}
    matches = analysis.get("matches") or []
    kinds = {k: sum(1 for m in matches if m["match_type"] == k) for k in ("exact", "semantic", "partial", "missing")}
    summary = ", ".join(f"{n} {k}" for k, n in kinds.items() if n) or "no expected units"
    contradictions = len(analysis.get("contradictions") or [])
    return f"The score is {step.score}: {summary}; {contradictions} contradiction(s)."


@judged_scorer("answer_similarity")
def answer_similarity(
    build: LlmBuild,
    *,
    require_ground_truth: bool = True,
    semantic_threshold: float = WEIGHTS.semantic_threshold,
    exact_match_bonus: float = WEIGHTS.exact_match_bonus,
    missing_penalty: float = WEIGHTS.missing_penalty,
    contradiction_penalty: float = WEIGHTS.contradiction_penalty,
    extra_info_penalty: float = WEIGHTS.extra_info_penalty,
    scale: float = 1,
) -> Scorer:
    """How closely the answer matches the expected answer (``ground_truth``), unit by unit."""
    weights = SimilarityWeights(
        semantic_threshold, exact_match_bonus, missing_penalty, contradiction_penalty, extra_info_penalty
    )
    scale = scale_option(scale)

    def generate_score(step: StepContext) -> float:
        return answer_similarity_score(step.analyze_result or {}, weights, scale=scale)

    scorer = build.scorer(
        description="How closely the answer matches the expected answer (ground_truth), unit by unit.",
        requires=("output", "ground_truth") if require_ground_truth else ("output",),
        options={**asdict(weights), "scale": scale, "require_ground_truth": bool(require_ground_truth)},
    )
    preprocess = build.step(
        step="preprocess",
        instructions=UNITS_INSTRUCTIONS,
        schema=Units,
        prompt=_similarity_units_prompt,
        when_empty=lambda _: {"output_units": [], "ground_truth_units": []},
    )
    analyze = build.step(
        step="analyze",
        instructions=MATCH_INSTRUCTIONS,
        schema=SimilarityAnalysis,
        prompt=_similarity_match_prompt,
        when_empty=lambda _: {"matches": [], "extra_in_output": [], "contradictions": []},
        expect=one_label_each(
            "ground_truth_units", "matches", "match_type", ("exact", "semantic", "partial", "missing")
        ),
    )
    return (
        scorer.preprocess(preprocess)
        .analyze(analyze)
        .generate_score(generate_score)
        .generate_reason(_similarity_generate_reason)
    )
