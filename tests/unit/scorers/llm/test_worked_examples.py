"""The spec's worked examples for all 13 LLM scorers, through ``build(...).arun`` against the fake judge over HTTP.

The judge's answers are scripted to be what the spec's example implies (a careful judge's verdicts); the
score must then be the spec's number. Ids are the spec's (scorers-spec.md section 5 and the per-scorer
sections); "derived" marks scorers for which the seeds give no number, so the vector follows the formula.
One fake judge serves the whole module: each example gets its own model name, so scripts never mix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from spanscore.run import Run
from spanscore.scorers import Status, build
from spanscore.scorers.judge.client import JudgeClient
from spanscore.scorers.llm.alignment import NOISE_DIMENSIONS
from tests.fakes.fake_openai import FakeJudgeServer, Reply


@dataclass(frozen=True)
class Example:
    spec_id: str
    scorer_id: str
    run: Run
    answers: list[dict[str, Any]]
    expected: float
    options: dict[str, Any] = field(default_factory=dict)


def verdicts(key: str, *labels: str) -> list[dict[str, str]]:
    return [{key: label, "reason": "r"} for label in labels]


def indexed(key: str, *labels: str) -> list[dict[str, Any]]:
    return [{"context_index": i, key: label, "reason": "r"} for i, label in enumerate(labels)]


def relevance(*levels: str, unused: tuple[int, ...] = ()) -> dict[str, Any]:
    evaluations = [
        {"context_index": i, "relevance_level": level, "was_used": i not in unused} for i, level in enumerate(levels)
    ]
    return {"evaluations": evaluations, "missing_context": []}


def dims(intent: float, requirements: float, completeness: float, appropriateness: float) -> dict[str, float]:
    return {
        "intent_alignment": intent,
        "requirements_fulfillment": requirements,
        "completeness": completeness,
        "response_appropriateness": appropriateness,
    }


def noise(robustness: float, levels: tuple[str, ...], issues: int = 0) -> dict[str, Any]:
    return {
        "dimensions": [{"dimension": d, "impact_level": lv} for d, lv in zip(NOISE_DIMENSIONS, levels, strict=True)],
        "major_issues": [f"issue {i}" for i in range(issues)],
        "robustness_score": robustness,
    }


ECLIPSE = [
    "Solar eclipses occur when the Moon blocks the Sun.",
    "The Moon moves between the Earth and Sun during eclipses.",
    "The Moon is visible at night.",
    "Stars twinkle due to atmospheric interference.",
    "Total eclipses can last up to 7.5 minutes.",
]
ECLIPSE_RUN = Run(
    input="What causes solar eclipses?",
    output="Solar eclipses happen when the Moon moves between Earth and the Sun, blocking sunlight.",
    context=ECLIPSE,
)
EINSTEIN = [
    "Einstein won the Nobel Prize for his discovery of the photoelectric effect in 1921.",
    "He published his theory of special relativity in 1905.",
    "His general relativity theory, published in 1915, revolutionized our understanding of gravity.",
]
AUSTRALIA = [
    "The Great Barrier Reef is off the coast of Queensland.",
    "Coral reefs are home to many species.",
    "Clownfish live among anemones.",
    "Australia has six states and two territories.",
    "The capital of Australia is Canberra.",
]
RAG = Run(input="q", output="an answer", context=["a", "b", "c", "d"])
COMPANY = Run(
    input="What's the company's growth like?",
    output="The company has grown from 100 employees in 2020 to 500 now, and might expand to 1000 by next year.",
    context=["The company had 100 employees in 2020.", "Current employee count is approximately 500."],
)
WEATHER_TOOLS = [
    {"name": "weather-tool", "description": "Get current weather information for any location"},
    {"name": "search-tool", "description": "Search the web"},
]
NOISE_OPTIONS = {"baseline_response": "A clean baseline answer.", "noisy_query": "A noisy query."}
THREE = {"claims": ["c1", "c2", "c3"]}
EXAMPLES = [
    Example(
        "TV-AR-1",
        "answer_relevancy",
        RAG,
        [{"statements": list("abcd")}, {"results": verdicts("result", "yes", "unsure", "no", "yes")}],
        0.58,
    ),
    Example(
        "derived",
        "answer_similarity",
        Run(input="What is 2+2?", output="4", ground_truth="4"),
        [
            {"output_units": ["4"], "ground_truth_units": ["4"]},
            {"matches": [{"ground_truth_unit": "4", "output_unit": "4", "match_type": "exact"}]},
        ],
        1.0,
    ),
    Example("derived", "bias", RAG, [{"opinions": ["o1", "o2"]}, {"results": verdicts("result", "yes", "no")}], 0.5),
    Example("TV-CP-1", "context_precision", RAG, [{"verdicts": indexed("verdict", "yes", "no", "yes", "no")}], 0.83),
    Example("TV-CP-2", "context_precision", RAG, [{"verdicts": indexed("verdict", "no", "no", "no", "no")}], 0.0),
    Example(
        "TV-CR-1",
        "context_relevance",
        Run(input="What were Einstein's major scientific achievements?", output="Nobel, 1905, 1915.", context=EINSTEIN),
        [relevance("high", "high", "high")],
        1.0,
    ),
    Example(
        "TV-CR-2",
        "context_relevance",
        ECLIPSE_RUN,
        [relevance("high", "high", "medium", "none", "high", unused=(4,))],
        0.64,
    ),
    Example(
        "TV-CR-3",
        "context_relevance",
        ECLIPSE_RUN,
        [relevance("high", "high", "medium", "none", "high", unused=(4,))],
        0.69,
        {"unused_high_relevance_context": 0.05, "missing_context_per_item": 0.1, "max_missing_context_penalty": 0.3},
    ),
    Example(
        "TV-CR-4",
        "context_relevance",
        Run(
            input="What is the capital of Australia?", output="The capital of Australia is Canberra.", context=AUSTRALIA
        ),
        [relevance("none", "none", "none", "low", "high")],
        0.26,
    ),
    Example(
        "TV-CR-5",
        "context_relevance",
        Run(input="q", output="a", context=["x", "y"]),
        [relevance("high", "medium")],
        85.0,
        {"scale": 100},
    ),
    Example(
        "TV-LRC-1",
        "context_recall",
        RAG,
        [{"verdicts": indexed("verdict", "yes", "no", "yes", "no")}],
        50.0,
        {"scale": 100},
    ),
    Example(
        "ground truth 2 of 4",
        "context_recall",
        Run(input="q", output="a", context=["x"], ground_truth="g"),
        [{"claims": ["c1", "c2", "c3", "c4"]}, {"verdicts": verdicts("verdict", "yes", "yes", "no", "no")}],
        0.5,
        {"against": "ground_truth"},
    ),
    Example(
        "TV-LF-1", "faithfulness", COMPANY, [THREE, {"verdicts": verdicts("verdict", "yes", "yes", "unsure")}], 0.67
    ),
    Example("TV-LF-2", "faithfulness", COMPANY, [THREE, {"verdicts": verdicts("verdict", "yes", "yes", "yes")}], 1.0),
    Example(
        "S1.9 unsupported",
        "hallucination",
        COMPANY,
        [THREE, {"verdicts": verdicts("verdict", "no", "no", "unsure")}],
        0.33,
    ),
    Example("TV-H-1", "hallucination", Run(input="q", output="", context=["c"]), [], 0.0),
    Example(
        "TV-NS-1", "noise_sensitivity", Run(input="q", output="a"), [noise(0.9, ("none",) * 5)], 0.9, NOISE_OPTIONS
    ),
    Example(
        "S1.11 ex.1", "noise_sensitivity", Run(input="q", output="a"), [noise(1.0, ("none",) * 5)], 1.0, NOISE_OPTIONS
    ),
    Example(
        "S1.11 ex.2",
        "noise_sensitivity",
        Run(input="q", output="a"),
        [noise(0.75, ("minimal", "moderate", "none", "minimal", "moderate"), issues=1)],
        0.65,
        NOISE_OPTIONS,
    ),
    Example(
        "S1.11 ex.3", "noise_sensitivity", Run(input="q", output="a"), [noise(0.1, ("severe",) * 5)], 0.1, NOISE_OPTIONS
    ),
    Example(
        "TV-PA-W", "prompt_alignment", Run(input="q", output="a"), [dims(1, 1, 1, 1)], 1.0, {"evaluation_mode": "user"}
    ),
    Example(
        "TV-PA-U",
        "prompt_alignment",
        Run(input="q", output="a"),
        [dims(1, 0.5, 0.5, 0)],
        0.65,
        {"evaluation_mode": "user"},
    ),
    Example(
        "S1.12 factorial",
        "prompt_alignment",
        Run(input="Write a factorial function", output="def f(n): ..."),
        [dims(1, 1, 0.85, 0.8)],
        0.95,
    ),
    Example(
        "S1.12 bullets",
        "prompt_alignment",
        Run(input="List TypeScript benefits in bullets", output="A paragraph."),
        [dims(1, 0.5, 0.75, 0.5)],
        0.75,
    ),
    Example(
        "S1.12 class",
        "prompt_alignment",
        Run(input="Write a Python class with ...", output="def __init__"),
        [dims(0.5, 0.25, 0.25, 0.25)],
        0.35,
    ),
    Example(
        "S1.12 scale 10", "prompt_alignment", Run(input="q", output="a"), [dims(0.9, 0.8, 0.8, 0.9)], 8.5, {"scale": 10}
    ),
    Example(
        "derived",
        "summarization",
        Run(input="A source text.", output="A summary."),
        [
            {"claims": ["c"]},
            {"questions": ["q1", "q2", "q3", "q4"]},
            {"claim_verdicts": verdicts("verdict", "yes")},
            {"question_verdicts": verdicts("answered", "yes", "yes", "yes", "no")},
        ],
        0.75,
    ),
    Example(
        "S1.16 weather",
        "tool_call_accuracy_llm",
        Run(
            input="What's the weather in Paris?",
            output="Sunny.",
            tool_calls=[{"name": "weather-tool", "arguments": {"location": "Paris"}}],
        ),
        [{"evaluations": [{"tool_called": "weather-tool", "was_appropriate": True}]}],
        1.0,
        {"available_tools": WEATHER_TOOLS},
    ),
    Example(
        "S1.16 clarification",
        "tool_call_accuracy_llm",
        Run(input="I need help with something", output="Happy to help: what do you need?"),
        [{"evaluations": [], "missing_tools": []}],
        1.0,
        {"available_tools": WEATHER_TOOLS},
    ),
    Example("derived", "toxicity", RAG, [{"verdicts": verdicts("verdict", "yes", "no", "no")}], 0.33),
]


@pytest.fixture(scope="module")
def examples_run() -> list[tuple[Example, Any]]:
    """Every example scored once, all against one fake judge; tests below look at the outcomes."""
    import asyncio

    async def score_all() -> list[tuple[Example, Any]]:
        client = JudgeClient(environ={})
        outcomes = []
        async with FakeJudgeServer() as server:
            for number, example in enumerate(EXAMPLES):
                model = f"example{number}"
                server.script(model, *(Reply.json(answer) for answer in example.answers))
                options = {"model": f"openai/{model}", "judge": {"api_base": server.base_url}, "client": client}
                result = await build(example.scorer_id, **options, **example.options).arun(example.run)
                outcomes.append((example, result))
        await client.aclose()
        return outcomes

    return asyncio.run(score_all())


def test_every_worked_example_reproduces(examples_run: list[tuple[Example, Any]]) -> None:
    wrong = [
        (example.spec_id, example.scorer_id, example.expected, result.score, result.error)
        for example, result in examples_run
        if result.status is not Status.OK or result.score != pytest.approx(example.expected)
    ]
    assert not wrong, wrong


def test_examples_cover_all_13_llm_scorers(examples_run: list[tuple[Example, Any]]) -> None:
    covered = {example.scorer_id for example, _ in examples_run}
    assert len(covered) == 13, sorted(covered)
