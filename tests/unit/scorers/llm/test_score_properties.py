"""Properties every LLM score formula keeps, whatever the judge says: within [0, scale], two decimals."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spanscore.scorers.llm.alignment import noise_sensitivity_score, prompt_alignment_score
from spanscore.scorers.llm.answers import answer_relevancy_score, answer_similarity_score
from spanscore.scorers.llm.context import context_relevance_score
from spanscore.scorers.llm.grounding import faithfulness_score

scales = st.sampled_from([1.0, 10.0, 100.0])
unit = st.floats(0, 1)


def two_decimals(value: float) -> bool:
    return abs(value * 100 - round(value * 100)) < 1e-6


@given(st.lists(st.sampled_from(["yes", "no", "unsure"]), max_size=20), scales)
def test_verdict_fractions(labels: list[str], scale: float):
    verdicts = [{"verdict": label} for label in labels]
    score = faithfulness_score(verdicts, scale)
    assert 0 <= score <= scale and two_decimals(score)
    results = [{"result": label} for label in labels]
    score = answer_relevancy_score(results, 0.3, scale)
    assert 0 <= score <= scale and two_decimals(score)


evaluation = st.fixed_dictionaries(
    {"relevance_level": st.sampled_from(["high", "medium", "low", "none"]), "was_used": st.booleans()}
)


@given(st.lists(evaluation, max_size=12), st.lists(st.text(max_size=3), max_size=6), scales)
def test_context_relevance_is_bounded(evaluations: list[dict[str, object]], missing: list[str], scale: float):
    score = context_relevance_score(evaluations, missing, scale=scale)
    assert 0 <= score <= scale and two_decimals(score)


match = st.fixed_dictionaries({"match_type": st.sampled_from(["exact", "semantic", "partial", "missing"])})


@given(st.lists(match, max_size=10), st.integers(0, 3), st.integers(0, 10), scales)
def test_answer_similarity_is_bounded(matches: list[dict[str, str]], contradictions: int, extras: int, scale: float):
    analysis = {"matches": matches, "contradictions": [{}] * contradictions, "extra_in_output": ["x"] * extras}
    score = answer_similarity_score(analysis, scale=scale)
    assert 0 <= score <= scale and two_decimals(score)


@given(unit, unit, unit, unit, st.sampled_from(["user", "system"]), scales)
def test_prompt_alignment_is_bounded(a: float, b: float, c: float, d: float, mode: str, scale: float):
    dims = {"intent_alignment": a, "requirements_fulfillment": b, "completeness": c, "response_appropriateness": d}
    score = prompt_alignment_score(dims, mode, scale)
    assert 0 <= score <= scale + 1e-9 and two_decimals(score)


level = st.sampled_from(["none", "minimal", "moderate", "significant", "severe"])


@given(st.floats(-1, 2), st.lists(level, max_size=5), st.integers(0, 10))
def test_noise_sensitivity_is_bounded(robustness: float, levels: list[str], issues: int):
    analysis = {
        "robustness_score": robustness,
        "dimensions": [{"impact_level": lv} for lv in levels],
        "major_issues": ["i"] * issues,
    }
    score = noise_sensitivity_score(analysis)
    assert 0 <= score <= 1 and two_decimals(score)
