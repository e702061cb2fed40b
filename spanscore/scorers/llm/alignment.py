"""``prompt_alignment`` and ``noise_sensitivity``: does the answer follow its instructions / withstand noise?

* prompt_alignment: the judge rates four dimensions in [0, 1] (intent,
  requirements, completeness, appropriateness). ``evaluation_mode`` "user"
  weighs them 0.4 / 0.3 / 0.2 / 0.1 against the user's prompt, "system"
  0.35 / 0.35 / 0.15 / 0.15 against the system prompt, and "both" (default)
  asks for both ratings and combines 0.7 x user + 0.3 x system, as the seed
  documents state (1.10.2 reuses the user rating for the system part). In
  "both" mode a run without a system prompt (the seed's basic examples) is
  rated against the user prompt alone and scored with the user weights,
  which is what the reference returns for it. x scale, rounded. A run lacking
  the user prompt ("user", "both") or the system prompt ("system") is
  ``missing_input``.
* noise_sensitivity (a CI scorer: needs ``baseline_response`` and
  ``noisy_query``): the judge compares the agent's answer to the noisy query
  with the clean baseline on five dimensions (impact none ... severe) and
  gives an overall robustness score. s = robustness clamped to [0, 1]; when
  it differs from the mean impact weight by more than discrepancy_threshold,
  s = min(s, mean); then s -= min(major issues x penalty, max penalty),
  floored at 0, rounded. No scale (the reference has none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

from spanscore.scorers import MissingInput, Scorer, StepContext
from spanscore.scorers.judge.answer_checks import ItemsExpected
from spanscore.scorers.llm.builder import LlmBuild, judged_scorer
from spanscore.scorers.llm.steps import JudgeStep, delimit, round2, scale_option
from spanscore.scorers.llm.verdicts import Unit, labelled

USER_WEIGHTS = (0.4, 0.3, 0.2, 0.1)
SYSTEM_WEIGHTS = (0.35, 0.35, 0.15, 0.15)
IMPACT_WEIGHTS = {"none": 1.0, "minimal": 0.85, "moderate": 0.6, "significant": 0.3, "severe": 0.1}

ALIGNMENT_INSTRUCTIONS = (
    "You rate how well an answer follows a prompt, on four dimensions, each from 0 to 1. Against a user prompt: "
    "intent_alignment = is the main request addressed; requirements_fulfillment = share of its explicit "
    "requirements met (list each requirement and whether it is met); completeness = nothing asked for is left out; "
    "response_appropriateness = format and tone fit what was asked (bullets when bullets were asked). Against a "
    "system prompt: intent = the answer serves the role it sets; requirements = share of its standing rules "
    "obeyed ('always give a code example', 'be concise'); completeness = every rule that applies here was applied; "
    "appropriateness = the persona, format and tone it sets. Example: user 'List 3 benefits in bullets', answer a "
    "paragraph with 3 benefits -> intent 1, requirements 0.5, completeness 1, appropriateness 0.3. Rate strictly "
    "against the prompt named in the request."
)
NOISE_INSTRUCTIONS = (
    "You test an agent's robustness to noise. You get the original question, a baseline answer given without "
    "noise, the noisy question (misinformation, distractions or conflicting instructions added) and the agent's "
    "answer to it. For each dimension (content_accuracy, completeness, relevance, consistency, hallucination) "
    "give impact_level, comparing the agent's answer with the baseline: 'none' = as good as the baseline; "
    "'minimal' = wording differs, still correct and complete; 'moderate' = noticeably worse (a gap, an aside the "
    "noise caused) but the core answer is right; 'significant' = a major error or omission caused by the noise; "
    "'severe' = derailed: it adopts the misinformation or answers the noise instead. List major issues (empty "
    "when none) and give robustness_score from 0 (derailed) to 1 (unaffected)."
)


class Requirement(BaseModel):
    requirement: str
    is_fulfilled: bool
    reasoning: str = ""


class Dimensions(BaseModel):
    intent_alignment: Unit
    requirements: list[Requirement] = Field(default_factory=list)
    requirements_fulfillment: Unit
    completeness: Unit
    missing_elements: list[str] = Field(default_factory=list)
    response_appropriateness: Unit
    reasoning: str = ""


class BothDimensions(BaseModel):
    user: Dimensions
    system: Dimensions


NOISE_DIMENSIONS = ("content_accuracy", "completeness", "relevance", "consistency", "hallucination")


class NoiseDimension(BaseModel):
    dimension: Annotated[Literal[NOISE_DIMENSIONS], BeforeValidator(labelled)]  # type: ignore[valid-type]
    impact_level: Literal["none", "minimal", "moderate", "significant", "severe"]
    specific_changes: str = ""
    noise_influence: str = ""


class NoiseAnalysis(BaseModel):
    dimensions: list[NoiseDimension]
    overall_assessment: str = ""
    major_issues: list[str] = Field(default_factory=list)
    robustness_score: float


def weighted(dimensions: Mapping[str, Any], weights: tuple[float, float, float, float]) -> float:
    keys = ("intent_alignment", "requirements_fulfillment", "completeness", "response_appropriateness")
    return sum(float(dimensions[key]) * weight for key, weight in zip(keys, weights, strict=True))


def prompt_alignment_score(analysis: Mapping[str, Any], mode: str = "both", scale: float = 1.0) -> float:
    """Weighted dimensions per mode (see the module docstring) x scale, rounded to 2 decimals."""
    if mode == "user" or (mode == "both" and "user" not in analysis):
        raw = weighted(analysis, USER_WEIGHTS)
    elif mode == "system":
        raw = weighted(analysis, SYSTEM_WEIGHTS)
    else:
        raw = 0.7 * weighted(analysis["user"], USER_WEIGHTS) + 0.3 * weighted(analysis["system"], SYSTEM_WEIGHTS)
    return round2(raw * scale)


def noise_sensitivity_score(
    analysis: Mapping[str, Any],
    *,
    impact_weights: Mapping[str, float] | None = None,
    major_issue_per_item: float = 0.1,
    max_major_issue_penalty: float = 0.3,
    discrepancy_threshold: float = 0.2,
) -> float:
    """The robustness formula of @mastra/evals 1.10.2 (see the module docstring), rounded to 2 decimals."""
    weights = {**IMPACT_WEIGHTS, **(impact_weights or {})}
    score = min(1.0, max(0.0, float(analysis["robustness_score"])))
    dimensions = analysis.get("dimensions") or []
    if dimensions:
        calculated = sum(weights[d["impact_level"]] for d in dimensions) / len(dimensions)
        if abs(score - calculated) > discrepancy_threshold:
            score = min(score, calculated)
    penalty = min(len(analysis.get("major_issues") or []) * major_issue_per_item, max_major_issue_penalty)
    return round2(max(0.0, score - penalty))


@judged_scorer("prompt_alignment")
def prompt_alignment(
    build: LlmBuild,
    *,
    evaluation_mode: Literal["user", "system", "both"] = "both",
    scale: float = 1,
) -> Scorer:
    """How well the answer follows the user's prompt, the system prompt, or both."""
    if evaluation_mode not in ("user", "system", "both"):
        raise ValueError(f"option evaluation_mode must be 'user', 'system' or 'both', got {evaluation_mode!r}")
    scale = scale_option(scale)
    needs = {"user": ("input",), "system": ("system",), "both": ("input",)}[evaluation_mode]

    def prompt(step: StepContext) -> str:
        run = step.run
        answer = run.output_text or ""
        if not answer.strip():
            raise MissingInput(["output"], "the answer is empty")
        mode = _effective_mode(evaluation_mode, step)
        parts = []
        if mode in ("user", "both"):
            parts.append(delimit("user_prompt", run.input_text or ""))
        if mode in ("system", "both"):
            parts.append(delimit("system_prompt", run.system or ""))
        what = {
            "user": "Rate the answer against the user prompt.",
            "system": "Rate the answer against the system prompt.",
            "both": "Rate the answer twice: under 'user' against the user prompt, under 'system' against the system "
            "prompt.",
        }[mode]
        return "\n\n".join([what, *parts, delimit("answer", answer)])

    def generate_score(step: StepContext) -> float:
        return prompt_alignment_score(step.analyze_result, evaluation_mode, scale)

    def generate_reason(step: StepContext) -> str:
        result = step.analyze_result
        focus = result["user"] if "user" in result else result
        unmet = [r["requirement"] for r in focus.get("requirements") or [] if not r["is_fulfilled"]]
        tail = f" Unmet: {'; '.join(unmet[:3])}." if unmet else ""
        return f"The score is {step.score} ({evaluation_mode} alignment, intent {focus['intent_alignment']}).{tail}"

    scorer = build.scorer(
        description="How well the answer follows the user's prompt and/or the system prompt.",
        requires=("output", *needs),
        options={"evaluation_mode": evaluation_mode, "scale": scale},
    )
    one, both = (
        build.step(
            step="analyze",
            instructions=ALIGNMENT_INSTRUCTIONS,
            schema=schema,
            prompt=prompt,
        )
        for schema in (Dimensions, BothDimensions)
    )
    analyze = _ModeStep(evaluation_mode, one, both)
    return scorer.analyze(analyze).generate_score(generate_score).generate_reason(generate_reason)


def _effective_mode(evaluation_mode: str, step: StepContext) -> str:
    """In "both" mode a run without a system prompt is rated against the user prompt alone, as the reference does."""
    if evaluation_mode == "both" and not (step.run.system or "").strip():
        return "user"
    return evaluation_mode


class _ModeStep:
    """The analyze step: asks for one rating, or for user and system ratings when the run has both prompts."""

    is_async = True

    def __init__(self, evaluation_mode: str, one: JudgeStep, both: JudgeStep) -> None:
        self.evaluation_mode, self.one, self.both = evaluation_mode, one, both

    async def __call__(self, step: StepContext) -> Any:
        chosen = self.both if _effective_mode(self.evaluation_mode, step) == "both" else self.one
        return await chosen(step)


def _one_verdict_per_dimension(_: StepContext) -> list[ItemsExpected]:
    return [
        ItemsExpected(
            "dimensions", len(NOISE_DIMENSIONS), label_field="dimension", labels=NOISE_DIMENSIONS, one_label_each=True
        )
    ]


def _noise_generate_reason(step: StepContext) -> str:
    result = step.analyze_result
    impacts = ", ".join(f"{d['dimension']}: {d['impact_level']}" for d in result["dimensions"])
    issues = "; ".join(result["major_issues"][:3]) or "none"
    return f"The score is {step.score}: impact by dimension ({impacts}); major issues: {issues}."


@judged_scorer("noise_sensitivity")
def noise_sensitivity(
    build: LlmBuild,
    *,
    baseline_response: str,
    noisy_query: str,
    noise_type: str | None = None,
    impact_weights: Mapping[str, float] | None = None,
    major_issue_per_item: float = 0.1,
    max_major_issue_penalty: float = 0.3,
    discrepancy_threshold: float = 0.2,
) -> Scorer:
    """Robustness of the answer to a noisy query against a clean baseline (CI only: needs test data)."""
    for name, value in (("baseline_response", baseline_response), ("noisy_query", noisy_query)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"noise_sensitivity needs the option {name} (a non-empty string)")
    unknown = sorted(set(impact_weights or {}) - set(IMPACT_WEIGHTS))
    if unknown:
        raise ValueError(f"option impact_weights: unknown level(s) {unknown}; use {sorted(IMPACT_WEIGHTS)}")
    scoring = {
        "impact_weights": {**IMPACT_WEIGHTS, **(impact_weights or {})},
        "major_issue_per_item": float(major_issue_per_item),
        "max_major_issue_penalty": float(max_major_issue_penalty),
        "discrepancy_threshold": float(discrepancy_threshold),
    }

    def prompt(step: StepContext) -> str:
        run = step.run
        question, answer = run.input_text or "", run.output_text or ""
        if not question.strip() or not answer.strip():
            raise MissingInput(["input", "output"], "noise_sensitivity needs the original query and the answer")
        kind = f"Noise type: {noise_type}.\n\n" if noise_type else ""
        return (
            f"Compare the agent's answer to the noisy question with the baseline.\n\n{kind}"
            f"{delimit('original_question', question)}\n\n{delimit('baseline_answer', baseline_response)}\n\n"
            f"{delimit('noisy_question', noisy_query)}\n\n{delimit('agent_answer', answer)}"
        )

    def generate_score(step: StepContext) -> float:
        return noise_sensitivity_score(step.analyze_result, **scoring)  # type: ignore[arg-type]

    scorer = build.scorer(
        description="Robustness of the answer to a noisy query, against a clean baseline (CI scorer).",
        requires=("input", "output"),
        options={"noise_type": noise_type, **scoring},
    )
    analyze = build.step("analyze", NOISE_INSTRUCTIONS, NoiseAnalysis, prompt, expect=_one_verdict_per_dimension)
    return scorer.analyze(analyze).generate_score(generate_score).generate_reason(_noise_generate_reason)
