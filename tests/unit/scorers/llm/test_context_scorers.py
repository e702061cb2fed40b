"""context_precision, context_relevance, context_recall: the spec's worked examples and runs against the fake judge."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanscore.run import Run
from spanscore.scorers import Status, build
from spanscore.scorers.llm.context import (
    context_precision_score,
    context_relevance_score,
    mean_average_precision,
)
from spanscore.scorers.llm.recall import recall_score
from tests.fakes.fake_openai import Reply


def indexed(*labels: str) -> list[dict[str, object]]:
    return [{"context_index": i, "verdict": label, "reason": ""} for i, label in enumerate(labels)]


def graded(*levels: str, unused: tuple[int, ...] = ()) -> list[dict[str, object]]:
    return [
        {"context_index": i, "relevance_level": level, "was_used": i not in unused, "reasoning": ""}
        for i, level in enumerate(levels)
    ]


def test_precision_worked_example_is_0_83():  # TV-CP-1
    assert context_precision_score(indexed("yes", "no", "yes", "no")) == 0.83


def test_precision_without_relevant_context_is_0():  # TV-CP-2
    assert context_precision_score(indexed("no", "no")) == 0.0
    assert context_precision_score([]) == 0.0


def test_precision_follows_context_index_not_answer_order():
    shuffled = list(reversed(indexed("yes", "no", "yes", "no")))
    assert context_precision_score(shuffled) == 0.83
    assert context_precision_score(indexed("no", "yes")) == 0.5
    assert context_precision_score(indexed("yes", "no", "yes", "no"), scale=100) == 83.33


@given(st.lists(st.booleans(), max_size=30))
def test_map_is_a_fraction_and_all_relevant_is_perfect(flags: list[bool]):
    value = mean_average_precision(flags)
    assert 0.0 <= value <= 1.0
    if flags and all(flags):
        assert value == 1.0
    if not any(flags):
        assert value == 0.0


def test_relevance_worked_examples():
    assert context_relevance_score(graded("high", "high", "high")) == 1.0  # TV-CR-1
    mixed = graded("high", "high", "medium", "none", "high", unused=(4,))  # weights sum to 3.7 over 5
    assert context_relevance_score(mixed) == 0.64  # TV-CR-2
    assert context_relevance_score(mixed, unused_high_relevance_penalty=0.05) == 0.69  # TV-CR-3
    assert context_relevance_score(graded("none", "none", "none", "low", "high")) == 0.26  # TV-CR-4


def test_relevance_scale_and_missing_penalty_cap():
    raw_085 = graded("high", "medium")  # (1.0 + 0.7) / 2
    assert context_relevance_score(raw_085, scale=100) == 85.0  # TV-CR-5
    many_missing = ["a", "b", "c", "d", "e"]
    assert context_relevance_score(graded("high"), many_missing) == 0.5  # capped at 0.5
    assert context_relevance_score(graded("none"), ["a"]) == 0.0  # floored at 0


def test_relevance_without_evaluations():
    assert context_relevance_score([], ["something missing"]) == 0.0
    assert context_relevance_score([], []) == 1.0


def test_recall_vectors():
    assert recall_score(indexed("yes", "yes", "no", "no"), scale=100) == 50.0  # TV-LRC-1
    assert recall_score(indexed("yes", "yes", "yes", "no", "no"), scale=100) == 60.0
    assert recall_score([]) == 0.0


EINSTEIN = Run(
    input="What were Einstein's major scientific achievements?",
    output="Einstein's major achievements include the Nobel Prize for the photoelectric effect, special relativity "
    "in 1905, and general relativity in 1915.",
    context=[
        "Einstein won the Nobel Prize for his discovery of the photoelectric effect in 1921.",
        "He published his theory of special relativity in 1905.",
        "His general relativity theory, published in 1915, revolutionized our understanding of gravity.",
    ],
)


async def test_precision_end_to_end(judge_server, judge_options):
    judge_server.script("cp", Reply.json({"verdicts": indexed("yes", "no", "yes")}))
    result = await build("context_precision", **judge_options("cp")).arun(EINSTEIN)
    assert result.status is Status.OK and result.score == 0.83
    prompt = judge_server.requests[0]["messages"][1]["content"]
    assert "[2] His general relativity" in prompt


async def test_precision_with_an_empty_context_list_is_missing_input(judge_server, judge_options):
    run = Run(input="q", output="a", context=[])
    result = await build("context_precision", **judge_options("cp")).arun(run)
    assert result.status is Status.MISSING_INPUT
    assert judge_server.requests == []


async def test_relevance_end_to_end_high_relevance_example(judge_server, judge_options):
    judge_server.script("cr", Reply.json({"evaluations": graded("high", "high", "high"), "overall_assessment": "ok"}))
    result = await build("context_relevance", **judge_options("cr")).arun(EINSTEIN)
    assert result.status is Status.OK and result.score == 1.0


async def test_relevance_custom_penalties_from_options(judge_server, judge_options):
    evaluations = graded("high", "high", "medium", "none", "high", unused=(4,))
    judge_server.script("cr", Reply.json({"evaluations": evaluations}))
    scorer = build("context_relevance", unused_high_relevance_context=0.05, **judge_options("cr"))
    result = await scorer.arun(Run(input="What causes solar eclipses?", output="The Moon.", context=["c"] * 5))
    assert result.score == 0.69
    assert "highly relevant but unused: 4" in (result.reason or "")


async def test_relevance_of_an_empty_context_list_is_one_without_a_call(judge_server, judge_options):
    result = await build("context_relevance", scale=10, **judge_options("cr")).arun(
        Run(input="q", output="a", context=[])
    )
    assert result.score == 10.0
    assert judge_server.requests == []


async def test_context_scorers_without_context_are_missing_input(judge_server, judge_options):
    for name in ("context_precision", "context_relevance", "context_recall"):
        result = await build(name, **judge_options("x")).arun(Run(input="q", output="a"))
        assert result.status is Status.MISSING_INPUT, name
        assert result.score is None
    assert judge_server.requests == []


async def test_recall_against_the_output(judge_server, judge_options):
    judge_server.script("rc", Reply.json({"verdicts": indexed("yes", "yes", "no", "no")}))
    run = Run(
        input="Summarize the company's security measures",
        output="The company implements encryption for data protection and requires 2FA for all users.",
        context=["Encryption at rest", "2FA is mandatory", "Regular audits", "Incident response 24/7"],
    )
    result = await build("context_recall", scale=100, **judge_options("rc")).arun(run)
    assert result.score == 50.0


async def test_recall_against_the_ground_truth(judge_server, judge_options):
    judge_server.script(
        "rc",
        Reply.json({"claims": ["Paris is the capital.", "It has 2M people.", "It is on the Seine."]}),
        Reply.json({"verdicts": [{"verdict": v} for v in ("yes", "yes", "no")]}),
    )
    run = Run(input="q", output="a", ground_truth="Paris, capital, 2M, Seine.", context=["Paris is the capital"])
    result = await build("context_recall", against="ground_truth", **judge_options("rc")).arun(run)
    assert result.score == 0.67
    missing = await build("context_recall", against="ground_truth", **judge_options("rc")).arun(
        Run(input="q", output="a")
    )
    assert missing.status is Status.MISSING_INPUT


def test_bad_options_are_refused_at_build_time():
    from spanscore.errors import ConfigError

    with pytest.raises(ConfigError, match="unused_high_relevance_context"):
        build("context_relevance", unused_high_relevance_context=2)
    with pytest.raises(ConfigError, match="against"):
        build("context_recall", against="input")
    with pytest.raises(ConfigError, match="scale"):
        build("context_precision", scale=0)


ECLIPSE = Run(
    input="What causes solar eclipses?",
    output="Solar eclipses happen when the Moon moves between Earth and the Sun, blocking sunlight.",
    context=[
        "Solar eclipses occur when the Moon blocks the Sun.",
        "The Moon moves between the Earth and Sun during eclipses.",
        "The Moon is visible at night.",
        "Stars twinkle due to atmospheric interference.",
        "Total eclipses can last up to 7.5 minutes.",
    ],
)
AUSTRALIA = Run(
    input="What is the capital of Australia?",
    output="The capital of Australia is Canberra.",
    context=[
        "The Great Barrier Reef is off the coast of Queensland.",
        "Coral reefs host a quarter of marine species.",
        "Many fish live among corals.",
        "Australia has six states and two territories.",
        "The capital of Australia is Canberra.",
    ],
)


@pytest.mark.parametrize(
    ("run", "evaluations", "options", "expected"),
    [
        (ECLIPSE, graded("high", "high", "medium", "none", "high", unused=(4,)), {}, 0.64),
        (
            ECLIPSE,
            graded("high", "high", "medium", "none", "high", unused=(4,)),
            {
                "unused_high_relevance_context": 0.05,
                "missing_context_per_item": 0.1,
                "max_missing_context_penalty": 0.3,
            },
            0.69,
        ),
        (AUSTRALIA, graded("none", "none", "none", "low", "high"), {}, 0.26),
    ],
    ids=["mixed-default-penalties", "mixed-custom-penalties", "low-relevance"],
)
async def test_relevance_worked_examples_through_the_judge(
    judge_server, judge_options, run, evaluations, options, expected
):
    judge_server.script("cr", Reply.json({"evaluations": evaluations, "missing_context": []}))
    result = await build("context_relevance", **options, **judge_options("cr")).arun(run)
    assert result.status is Status.OK
    assert result.score == expected
