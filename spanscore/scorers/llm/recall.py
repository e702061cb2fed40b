"""``context_recall``: how much of the context (or of the ground truth) made it through.

By default (the seed's metric) the judge decides for each context piece
whether the answer carries its information: recalled / pieces x scale. With
``against="ground_truth"`` (the @mastra/evals 1.10.2 scorer) the ground truth
is split into claims and each is checked for support in the context:
min(1, attributed / claims) x scale. No items -> 0; no context at all ->
``missing_input``. Rounded to two decimals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from spanscore.scorers import Scorer, StepContext
from spanscore.scorers.judge.answer_checks import ItemsExpected
from spanscore.scorers.llm.builder import LlmBuild, judged_scorer
from spanscore.scorers.llm.context import (
    IndexedVerdicts,
    context_scorer,
    documents_of,
    one_per_piece,
    question_answer,
)
from spanscore.scorers.llm.steps import (
    context_option,
    delimit,
    numbered,
    round2,
    scale_option,
)
from spanscore.scorers.llm.verdicts import Claims, YesNo, judged_item, judged_list

RECALL_INSTRUCTIONS = (
    "You check recall: for every context piece, by its index, 'yes' = the answer conveys the piece's information, "
    "paraphrase counts (piece 'The shop opens at 9.', answer 'It opens at nine.'); 'no' = the answer leaves it "
    "out or changes it. One verdict per piece."
)
ATTRIBUTION_INSTRUCTIONS = (
    "You check attribution: for every claim of the reference answer, in order, 'yes' = the context pieces contain "
    "what is needed to state it (claim 'The shop opens at 9.', piece 'Opening time: 9:00.'); 'no' = they do not, "
    "or they say otherwise. One verdict per claim."
)
GROUND_TRUTH_CLAIMS = (
    "You split a reference answer into self-contained factual claims, one fact each, with pronouns resolved."
)


AttributionVerdict = judged_item("AttributionVerdict", "claim", (str, ""), "verdict", YesNo)
AttributionVerdicts = judged_list("AttributionVerdicts", "verdicts", AttributionVerdict)


def recall_score(verdicts: Sequence[Mapping[str, Any]], scale: float = 1.0, *, items: int | None = None) -> float:
    """Recalled (or attributed) / items judged, capped at 1, x scale, rounded to 2 decimals; 0 without items.

    ``items`` is the number of items the judge was asked about (context pieces, or ground-truth claims);
    the count of verdicts it returned is only a fallback for callers that have nothing else.
    """
    total = len(verdicts) if items is None else items
    if total <= 0:
        return 0.0
    return round2(min(1.0, sum(1 for v in verdicts if v.get("verdict") == "yes") / total) * scale)


def _items_judged(against: str, configured: tuple[str, ...] | None) -> Callable[[StepContext], int]:
    """How many items the analyze step asked about: context pieces, or the ground truth's claims."""

    def count(step: StepContext) -> int:
        if against == "output":
            return len(documents_of(step, configured))
        return len((step.preprocess_result or {}).get("claims") or [])

    return count


def _expectation(against: str, configured: tuple[str, ...] | None) -> Callable[[StepContext], list[ItemsExpected]]:
    if against == "output":
        return one_per_piece(configured, "verdicts", "verdict", ("yes", "no"))
    count = _items_judged(against, configured)
    return lambda step: [ItemsExpected("verdicts", count(step), label_field="verdict", labels=("yes", "no"))]


def _recall_prompt(configured: tuple[str, ...] | None) -> Callable[[StepContext], str | None]:
    def prompt(step: StepContext) -> str | None:
        documents = documents_of(step, configured)
        if not documents:
            return None
        listing = numbered("context", documents)
        return f"Check which context pieces the answer conveys.\n\n{question_answer(step)}\n\n{listing}"

    return prompt


def _claims_prompt(configured: tuple[str, ...] | None) -> Callable[[StepContext], str | None]:
    def prompt(step: StepContext) -> str | None:
        documents_of(step, configured)
        truth = step.run.ground_truth or ""
        return f"List the claims of this reference answer.\n\n{delimit('reference', truth)}" if truth.strip() else None

    return prompt


def _attribution_prompt(configured: tuple[str, ...] | None) -> Callable[[StepContext], str | None]:
    def prompt(step: StepContext) -> str | None:
        claims = (step.preprocess_result or {}).get("claims") or []
        if not claims:
            return None
        documents = documents_of(step, configured)
        return (
            f"Check each claim against the context.\n\n{numbered('context', documents)}\n\n{numbered('claims', claims)}"
        )

    return prompt


def _no_verdicts(_: StepContext) -> dict[str, Any]:
    return {"verdicts": []}


@judged_scorer("context_recall")
def context_recall(
    build: LlmBuild,
    *,
    context: Sequence[str] | None = None,
    against: Literal["output", "ground_truth"] = "output",
    scale: float = 1,
) -> Scorer:
    """Share of the context the answer recalls (or, against the ground truth, of its claims the context backs)."""
    if against not in ("output", "ground_truth"):
        raise ValueError(f"option against must be 'output' or 'ground_truth', got {against!r}")
    configured, scale = context_option(context), scale_option(scale)
    items_judged = _items_judged(against, configured)
    expect = _expectation(against, configured)
    noun = (
        "context pieces are recalled by the answer"
        if against == "output"
        else "ground-truth claims are backed by the context"
    )

    def generate_score(step: StepContext) -> float:
        return recall_score((step.analyze_result or {}).get("verdicts") or [], scale, items=items_judged(step))

    def generate_reason(step: StepContext) -> str:
        verdicts = (step.analyze_result or {}).get("verdicts") or []
        hits = sum(1 for v in verdicts if v.get("verdict") == "yes")
        return f"The score is {step.score} because {hits} of {items_judged(step)} {noun}."

    options = {"scale": scale, "against": against}
    if against == "output":
        scorer = context_scorer(build, "Share of the retrieved context the answer conveys.", ("output",), options)
        analyze = build.step(
            "analyze",
            RECALL_INSTRUCTIONS,
            IndexedVerdicts,
            _recall_prompt(configured),
            when_empty=_no_verdicts,
            expect=expect,
        )
        return scorer.analyze(analyze).generate_score(generate_score).generate_reason(generate_reason)
    scorer = context_scorer(
        build, "Share of the ground truth's claims the retrieved context backs.", ("ground_truth",), options
    )
    preprocess = build.step(
        "preprocess", GROUND_TRUTH_CLAIMS, Claims, _claims_prompt(configured), when_empty=lambda _: {"claims": []}
    )
    analyze = build.step(
        "analyze",
        ATTRIBUTION_INSTRUCTIONS,
        AttributionVerdicts,
        _attribution_prompt(configured),
        when_empty=_no_verdicts,
        expect=expect,
    )
    return (
        scorer.preprocess(preprocess).analyze(analyze).generate_score(generate_score).generate_reason(generate_reason)
    )
