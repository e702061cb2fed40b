"""Property: for every LLM scorer, a judge answer that does not answer its question is never scored.

Hypothesis generates, for each of the 13 built-in LLM scorers, an analyze answer with the wrong number of
entries, duplicate or out-of-range indices, or labels outside the rubric, and runs the scorer through the real
judge client (re-ask, validation, answer checks) with a scripted transport in place of litellm, so hundreds of
cases stay fast; the same path over real HTTP is covered by test_answer_fidelity.py and test_worked_examples.py.
The scorer must end in ``error``, with no score, every time; the well-formed answer must be scored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spanscore.run import Run
from spanscore.scorers import Status, build
from spanscore.scorers.judge.client import JudgeClient
from spanscore.scorers.judge.transport import Reply
from spanscore.scorers.llm.alignment import NOISE_DIMENSIONS

UNKNOWN_LABELS = ["maybe", "partly", "n/a", "relevant", "yes no", "true-ish", "5"]


class ScriptedTransport:
    """Answers each completion with the next scripted text, repeating the last one (so re-asks get it too)."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = [json.dumps(answer) for answer in answers]
        self.calls = 0

    async def complete(self, kwargs: dict[str, Any], *, structured: bool) -> Reply:
        text = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return Reply(text=text, finish_reason="stop", input_tokens=10, output_tokens=5, cost_usd=0.0)

    async def shutdown(self) -> None:
        return None


@dataclass(frozen=True)
class Case:
    """How to drive one scorer with n judged items, and the shape of its final (checked) answer."""

    scorer_id: str
    options: dict[str, Any]
    run: Callable[[int], Run]
    before: Callable[[int], list[dict[str, Any]]]
    field: str
    item: Callable[[int, str], dict[str, Any]]
    labels: tuple[str, ...]
    label_key: str
    index_key: str | None = None
    wrap: Callable[[dict[str, Any]], dict[str, Any]] = lambda answer: answer


def context_run(n: int) -> Run:
    return Run(input="q", output="an answer", context=[f"piece {i}" for i in range(n)], ground_truth="truth")


def plain_run(_: int) -> Run:
    return Run(input="q", output="an answer", context=["c"], ground_truth="truth")


def listed(key: str) -> Callable[[int], list[dict[str, Any]]]:
    return lambda n: [{key: [f"{key} {i}" for i in range(n)]}]


def verdict(key: str) -> Callable[[int, str], dict[str, Any]]:
    return lambda _i, label: {key: label, "reason": "r"}


def indexed(key: str) -> Callable[[int, str], dict[str, Any]]:
    return lambda i, label: {"context_index": i, key: label, "was_used": True, "reason": "r"}


def noise_run(_: int) -> Run:
    return Run(input="q", output="an answer")


TOOLS = [{"name": f"tool{i}", "description": "does things"} for i in range(3)]
CASES = [
    Case(
        "faithfulness",
        {},
        plain_run,
        listed("claims"),
        "verdicts",
        verdict("verdict"),
        ("yes", "no", "unsure"),
        "verdict",
    ),
    Case(
        "hallucination",
        {},
        plain_run,
        listed("claims"),
        "verdicts",
        verdict("verdict"),
        ("yes", "no", "unsure"),
        "verdict",
    ),
    Case(
        "answer_relevancy",
        {},
        plain_run,
        listed("statements"),
        "results",
        verdict("result"),
        ("yes", "unsure", "no"),
        "result",
    ),
    Case("bias", {}, plain_run, listed("opinions"), "results", verdict("result"), ("yes", "no"), "result"),
    Case("toxicity", {}, plain_run, lambda n: [], "verdicts", verdict("verdict"), ("yes", "no"), "verdict"),
    Case(
        "context_precision",
        {},
        context_run,
        lambda n: [],
        "verdicts",
        indexed("verdict"),
        ("yes", "no"),
        "verdict",
        "context_index",
    ),
    Case(
        "context_relevance",
        {},
        context_run,
        lambda n: [],
        "evaluations",
        indexed("relevance_level"),
        ("high", "medium", "low", "none"),
        "relevance_level",
        "context_index",
    ),
    Case(
        "context_recall",
        {},
        context_run,
        lambda n: [],
        "verdicts",
        indexed("verdict"),
        ("yes", "no"),
        "verdict",
        "context_index",
    ),
    Case(
        "context_recall",
        {"against": "ground_truth"},
        plain_run,
        listed("claims"),
        "verdicts",
        verdict("verdict"),
        ("yes", "no"),
        "verdict",
    ),
    Case(
        "answer_similarity",
        {},
        plain_run,
        lambda n: [{"output_units": ["u"], "ground_truth_units": [f"g{i}" for i in range(n)]}],
        "matches",
        lambda i, label: {"ground_truth_unit": f"g{i}", "match_type": label},
        ("exact", "semantic", "partial", "missing"),
        "match_type",
    ),
    Case(
        "summarization",
        {},
        plain_run,
        lambda n: [
            {"claims": ["c"]},
            {"questions": [f"q{i}" for i in range(n)]},
            {"claim_verdicts": [{"verdict": "yes"}]},
        ],
        "question_verdicts",
        verdict("answered"),
        ("yes", "no"),
        "answered",
    ),
    Case(
        "tool_call_accuracy_llm",
        {"available_tools": TOOLS},
        lambda n: Run(input="q", output="a", tool_calls=[{"name": f"tool{i % 3}", "arguments": {}} for i in range(n)]),
        lambda n: [],
        "evaluations",
        lambda i, label: {"tool_called": f"tool{i % 3}", "was_appropriate": label},
        (True, False),
        "was_appropriate",  # type: ignore[arg-type]
    ),
    Case(
        "noise_sensitivity",
        {"baseline_response": "b", "noisy_query": "nq"},
        noise_run,
        lambda n: [],
        "dimensions",
        lambda i, label: {"dimension": NOISE_DIMENSIONS[i % 5], "impact_level": label},
        ("none", "minimal", "moderate", "significant", "severe"),
        "impact_level",
        wrap=lambda answer: {**answer, "robustness_score": 0.8},
    ),
]
FIXED_COUNT = {"noise_sensitivity": 5}
NO_COUNT = {"toxicity"}  # the judge chooses the statements; only labels are checked


def answer(case: Case, n: int, labels: list[Any]) -> dict[str, Any]:
    return case.wrap({case.field: [case.item(i, label) for i, label in enumerate(labels)]})


def scored(case: Case, n: int, final: dict[str, Any]) -> Any:
    transport = ScriptedTransport([*case.before(n), final])
    client = JudgeClient(environ={}, transport=transport)
    scorer = build(case.scorer_id, model="openai/prop", client=client, **case.options)
    return scorer.run(case.run(n))


@st.composite
def mismatched(draw: st.DrawFn) -> tuple[Case, int, dict[str, Any], str]:
    case = draw(st.sampled_from(CASES))
    n = FIXED_COUNT.get(case.scorer_id) or draw(st.integers(1, 5))
    labels = [draw(st.sampled_from(case.labels)) for _ in range(n)]
    kinds = ["label"] if case.scorer_id in NO_COUNT else ["short", "long", "label"]
    if case.index_key:
        kinds += ["out_of_range", "duplicate"] if n >= 2 else ["out_of_range"]
    if case.scorer_id == "noise_sensitivity":
        kinds.append("duplicate_dimension")
    kind = draw(st.sampled_from(kinds))
    good = answer(case, n, labels)
    items = good[case.field]
    position = draw(st.integers(0, n - 1))
    if kind == "short":
        items = items[: draw(st.integers(0, n - 1))]
    elif kind == "long":
        items = items + [case.item(n + extra, labels[0]) for extra in range(draw(st.integers(1, 3)))]
    elif kind == "label":
        items[position] = {**items[position], case.label_key: draw(st.sampled_from(UNKNOWN_LABELS))}
    elif kind == "out_of_range":
        items[position] = {**items[position], "context_index": n + draw(st.integers(0, 5))}
    elif kind == "duplicate":
        other = (position + 1) % n
        items[other] = {**items[other], "context_index": items[position]["context_index"]}
    else:
        items[1] = {**items[1], "dimension": items[0]["dimension"]}
    return case, n, {**good, case.field: items}, kind


@settings(max_examples=120, deadline=None)
@given(mismatched())
def test_a_mismatched_answer_is_never_scored(example: tuple[Case, int, dict[str, Any], str]) -> None:
    case, n, final, kind = example
    result = scored(case, n, final)
    assert result.status is Status.ERROR, (case.scorer_id, kind, final, result)
    assert result.score is None


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(CASES), st.data())
def test_a_matching_answer_is_scored(case: Case, data: st.DataObject) -> None:
    n = FIXED_COUNT.get(case.scorer_id) or data.draw(st.integers(1, 5))
    labels = [data.draw(st.sampled_from(case.labels)) for _ in range(n)]
    result = scored(case, n, answer(case, n, labels))
    assert result.status is Status.OK, (case.scorer_id, result.error)
    assert result.score is not None


def test_prompt_alignment_dimension_outside_0_1_is_never_scored() -> None:
    dims = {"intent_alignment": 1.4, "requirements_fulfillment": 1, "completeness": 1, "response_appropriateness": 1}
    client = JudgeClient(environ={}, transport=ScriptedTransport([dims]))
    result = build("prompt_alignment", model="openai/prop", client=client).run(Run(input="q", output="a"))
    assert result.status is Status.ERROR and result.score is None
