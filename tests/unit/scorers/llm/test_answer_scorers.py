"""answer_relevancy, answer_similarity, bias, toxicity: formulas and runs against the fake judge."""

from __future__ import annotations

import pytest

from spanscore.run import Run
from spanscore.scorers import Status, build
from spanscore.scorers.llm.answers import answer_relevancy_score, answer_similarity_score
from spanscore.scorers.llm.opinions import bias_score, toxicity_score
from tests.fakes.fake_openai import Reply


def results(*labels: str) -> list[dict[str, str]]:
    return [{"result": label, "reason": ""} for label in labels]


def match(kind: str) -> dict[str, object]:
    return {"ground_truth_unit": "g", "output_unit": None if kind == "missing" else "o", "match_type": kind}


def test_answer_relevancy_formula():
    assert answer_relevancy_score(results("yes", "unsure", "no", "yes")) == 0.58  # TV-AR-1: 0.575 rounded half up
    assert answer_relevancy_score(results("yes", "unsure"), uncertainty_weight=0.5) == 0.75
    assert answer_relevancy_score(results("no")) == 0.0
    assert answer_relevancy_score([]) == 0.0
    assert answer_relevancy_score(results("yes", "no"), scale=10) == 5.0


def test_answer_similarity_formula():
    assert answer_similarity_score({"matches": [match("exact")] * 3}) == 1.0
    # semantic 0.8 + missing -0.15 over 2 x 1.2 = 0.2708
    assert answer_similarity_score({"matches": [match("semantic"), match("missing")]}) == 0.27
    contradicted = {"matches": [match("exact")], "contradictions": [{"output_unit": "o", "ground_truth_unit": "g"}]}
    assert answer_similarity_score(contradicted) == 0.0
    # partial 0.4 / 1.2 = 0.333 minus extras capped at 0.2
    assert answer_similarity_score({"matches": [match("partial")], "extra_in_output": ["x"] * 10}) == 0.13
    assert answer_similarity_score({"matches": []}) == 0.0
    assert answer_similarity_score({"matches": [match("exact")]}, scale=100) == 100.0


def test_bias_and_toxicity_formulas():
    assert bias_score(results("yes", "no", "no", "no")) == 0.25
    assert bias_score([]) == 0.0
    toxic = [{"verdict": v, "reason": ""} for v in ("yes", "no", "no")]
    assert toxicity_score(toxic) == 0.33
    assert toxicity_score([]) == 1.0  # the reference's rule for a verdict-less answer


async def test_answer_relevancy_end_to_end(judge_server, judge_options):
    judge_server.script(
        "ar",
        Reply.json({"statements": ["Exercise helps the heart.", "I like cats.", "It improves mood.", "Sleep helps."]}),
        Reply.json({"results": results("yes", "no", "yes", "unsure")}),
    )
    run = Run(input="What are the health benefits of regular exercise?", output="Exercise helps the heart...")
    result = await build("answer_relevancy", **judge_options("ar")).arun(run)
    assert result.status is Status.OK and result.score == 0.58
    assert result.steps["analyze"]["results"][1]["result"] == "no"


async def test_labels_are_normalised_before_validation(judge_server, judge_options):
    judge_server.script(
        "ar",
        Reply.json({"statements": ["a", "b"]}),
        Reply.json({"results": [{"result": "Yes "}, {"result": "UNSURE"}]}),
    )
    result = await build("answer_relevancy", **judge_options("ar")).arun(Run(input="q", output="a. b."))
    assert result.score == 0.65


async def test_answer_similarity_needs_ground_truth(judge_server, judge_options):
    scorer = build("answer_similarity", **judge_options("as"))
    result = await scorer.arun(Run(input="What is 2+2?", output="4"))
    assert result.status is Status.MISSING_INPUT
    lenient = build("answer_similarity", require_ground_truth=False, **judge_options("as"))
    result = await lenient.arun(Run(input="What is 2+2?", output="4"))
    assert result.status is Status.OK and result.score == 0.0
    assert judge_server.requests == []


async def test_answer_similarity_end_to_end(judge_server, judge_options):
    judge_server.script(
        "as",
        Reply.json({"output_units": ["Paris is the capital"], "ground_truth_units": ["capital is Paris"]}),
        Reply.json({"matches": [match("exact")], "extra_in_output": [], "contradictions": []}),
    )
    run = Run(input="Capital of France?", output="Paris is the capital.", ground_truth="The capital of France is Paris")
    result = await build("answer_similarity", **judge_options("as")).arun(run)
    assert result.score == 1.0


async def test_bias_end_to_end_and_orientation(judge_server, judge_options):
    judge_server.script(
        "bias",
        Reply.json({"opinions": ["Young people are lazy.", "Teams need trust."]}),
        Reply.json({"results": results("yes", "no")}),
    )
    scorer = build("bias", **judge_options("bias"))
    assert scorer.info.higher_is_better is False
    result = await scorer.arun(
        Run(input="How do age groups perform?", output="Young people are lazy. Teams need trust.")
    )
    assert result.score == 0.5


async def test_bias_without_opinions_is_zero_after_one_call(judge_server, judge_options):
    judge_server.script("bias", Reply.json({"opinions": []}))
    result = await build("bias", **judge_options("bias")).arun(Run(input="q", output="Water boils at 100 C."))
    assert result.score == 0.0
    assert len(judge_server.requests) == 1


async def test_toxicity_end_to_end(judge_server, judge_options):
    verdicts = [{"statement": s, "verdict": v} for s, v in (("You are an idiot.", "yes"), ("Here is the fix.", "no"))]
    judge_server.script("tox", Reply.json({"verdicts": verdicts}))
    scorer = build("toxicity", **judge_options("tox"))
    assert scorer.info.higher_is_better is False
    result = await scorer.arun(Run(input="Feedback?", output="You are an idiot. Here is the fix."))
    assert result.score == 0.5
    assert "<<<BEGIN question>>>" in judge_server.requests[0]["messages"][1]["content"]


async def test_toxicity_rejects_an_empty_verdict_list_instead_of_scoring_it(judge_server, judge_options):
    judge_server.script("tox", Reply.json({"verdicts": []}), Reply.json({"verdicts": []}))
    result = await build("toxicity", **judge_options("tox")).arun(Run(input="q", output="Thanks, that helps."))
    assert result.status is Status.ERROR and result.score is None


async def test_toxicity_of_an_empty_answer_is_zero(judge_server, judge_options):
    result = await build("toxicity", **judge_options("tox")).arun(Run(input="q", output=""))
    assert result.score == 0.0 and judge_server.requests == []


def test_unknown_options_are_named():
    from spanscore.errors import ConfigError

    with pytest.raises(ConfigError, match="uncertainty"):
        build("answer_relevancy", uncertainty=0.3)


def test_the_similarity_weights_are_declared_once_and_refuse_a_bad_one_by_name() -> None:
    """The scorer's options and the formula share one ``SimilarityWeights`` (#27 duplicates)."""
    import pytest

    from spanscore.scorers.llm.answers import WEIGHTS, SimilarityWeights

    assert answer_similarity_score({"matches": [match("semantic")]}, WEIGHTS) == answer_similarity_score(
        {"matches": [match("semantic")]}
    )
    assert answer_similarity_score({"matches": [match("semantic")]}, SimilarityWeights(semantic_threshold=1.2)) == 1.0
    with pytest.raises(ValueError, match="option missing_penalty must be a non-negative number"):
        SimilarityWeights(missing_penalty=-0.1)
