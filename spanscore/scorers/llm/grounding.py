"""``faithfulness`` and ``hallucination``: are the answer's claims backed by the run's context?

Both split the final answer into claims (preprocess), then have the judge
check each claim against the context (analyze). Context is the ``context``
option, else the run's retrieved documents, else its tool results; a run with
none of these is ``missing_input``, never scored.

* faithfulness = claims the context supports / claims, x scale (higher is
  better); "unsure" and "no" count zero; no claims -> 0.
* hallucination = claims that contradict or are not backed by the context /
  claims, x scale (lower is better); an empty answer -> 0. A claim the judge
  is ``unsure`` about is not backed by the context, so it counts as
  hallucinated (the spec: "claims not present in context are treated as
  hallucinations"); only "no" (not hallucinated) counts as grounded.

The judge must return one verdict per claim; any other answer is re-asked
and then recorded as an error (``judge_checks``), never scored.

Both round to two decimals, like the reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spanscore.scorers import MissingInput, Scorer, StepContext
from spanscore.scorers.llm.builder import LlmBuild, judged_scorer
from spanscore.scorers.llm.steps import (
    about_the_answer,
    context_option,
    fraction,
    listed_reasons,
    numbered,
    one_label_each,
    round2,
    run_context,
    scale_option,
)
from spanscore.scorers.llm.verdicts import Claims, ClaimVerdicts
from spanscore.scorers.wording import because, share

CLAIMS_INSTRUCTIONS = (
    "You split an assistant's answer into claims. A claim is one self-contained statement of fact or "
    "opinion that can be checked on its own: resolve pronouns, keep numbers, dates and hedges "
    "('about', 'might') exactly as written. Skip greetings, questions and filler. Keep the original language."
)

FAITHFULNESS_INSTRUCTIONS = (
    "You check each claim, in order, against the context pieces only (not your own knowledge). "
    "'yes': the context states it or directly implies it (context 'sales doubled in 2023', claim 'sales rose in "
    "2023'). 'no': the context contradicts it (claim 'sales fell in 2023'). 'unsure': the context neither supports "
    "nor contradicts it (claim 'sales rose because of ads'). A claim that is only partly supported is 'unsure'. "
    "Give a one-sentence reason per claim."
)

HALLUCINATION_INSTRUCTIONS = (
    "You look for hallucinations: for each claim, in order, decide whether the context pieces back it. 'no' (not "
    "hallucinated): the context states or directly implies it, and approximations the context's precision allows "
    "count (context '498 staff', claim 'about 500 staff'). 'yes' (hallucinated): the context contradicts it "
    "(claim '300 staff') or does not contain what it asserts (claim 'staff are happy'); speculation or opinion "
    "about things absent from the context counts. 'unsure': you cannot tell; it is treated as hallucinated. Use "
    "only the context. Give a one-sentence reason per claim."
)


NO_CONTEXT = "no context: set the context option, or score runs with retrieved documents or tool results"


def faithfulness_score(verdicts: Sequence[Mapping[str, Any]], scale: float = 1.0) -> float:
    """Supported claims / claims x scale, rounded to 2 decimals; 0 without verdicts."""
    return round2(fraction(list(verdicts), "verdict", "yes") * scale)


def hallucination_score(verdicts: Sequence[Mapping[str, Any]], scale: float = 1.0) -> float:
    """Hallucinated claims ('yes' or 'unsure') / claims x scale, rounded to 2 decimals; 0 without verdicts."""
    return round2((1.0 - fraction(list(verdicts), "verdict", "no")) * scale) if verdicts else 0.0


_claims_prompt = about_the_answer("List the claims made in this answer.")


def _check_prompt(configured: tuple[str, ...] | None, verb: str) -> Any:
    def build(context: StepContext) -> str | None:
        claims = (context.preprocess_result or {}).get("claims") or []
        if not claims:
            return None
        documents = run_context(context.run, configured) or []
        return (
            f"{verb} each claim against the context. Return one verdict per claim, in the same order.\n\n"
            f"{numbered('context', documents)}\n\n{numbered('claims', claims)}"
        )

    return build


one_verdict_per_claim = one_label_each("claims", "verdicts", "verdict", ("yes", "no", "unsure"))
"""The analyze step judged the preprocess step's claims, in order."""


def _require_context(configured: tuple[str, ...] | None) -> Any:
    def preprocess_prompt(context: StepContext) -> str | None:
        prompt = _claims_prompt(context)
        if prompt is not None and not run_context(context.run, configured):
            raise MissingInput(["context"], NO_CONTEXT)
        return prompt

    return preprocess_prompt


def _no_claims(_: StepContext) -> dict[str, Any]:
    return {"claims": []}


@dataclass(frozen=True, slots=True)
class _Grounding:
    """What tells faithfulness from hallucination: the same claims, judged and counted the other way round."""

    description: str
    instructions: str
    verb: str
    higher_is_better: bool


_KINDS = {
    "faithfulness": _Grounding(
        "Share of the answer's claims supported by the run's context.", FAITHFULNESS_INSTRUCTIONS, "Check", True
    ),
    "hallucination": _Grounding(
        "Share of the answer's claims not grounded in the run's context (lower is better).",
        HALLUCINATION_INSTRUCTIONS,
        "Check for hallucination",
        False,
    ),
}


def _grounding_scorer(build: LlmBuild, *, context: Sequence[str] | None = None, scale: float = 1) -> Scorer:
    """The share of the answer's claims the context supports (faithfulness) or does not (hallucination).

    One factory for both, told apart by the registered name (``_KINDS``).
    """
    kind = _KINDS[build.scorer_id]
    configured = context_option(context)
    scale = scale_option(scale)
    is_faithfulness = build.scorer_id == "faithfulness"
    score_of = faithfulness_score if is_faithfulness else hallucination_score

    def generate_score(context: StepContext) -> float:
        return score_of((context.analyze_result or {}).get("verdicts") or [], scale)

    def generate_reason(context: StepContext) -> str:
        verdicts = (context.analyze_result or {}).get("verdicts") or []
        if not verdicts:
            return because(context.score, "the answer makes no checkable claims")
        flagging = ("yes",) if is_faithfulness else ("yes", "unsure")  # unsure = not backed = hallucinated
        flagged = sum(1 for v in verdicts if v.get("verdict") in flagging)
        if is_faithfulness:
            worst = listed_reasons(verdicts, "verdict", "no") or listed_reasons(verdicts, "verdict", "unsure")
            summary = share(flagged, len(verdicts), "claim", "supported by the context")
        else:
            worst = listed_reasons(verdicts, "verdict", "yes") or listed_reasons(verdicts, "verdict", "unsure")
            summary = share(flagged, len(verdicts), "claim", "not backed by the context")
        return because(context.score, summary, worst)

    scorer = build.scorer(
        description=kind.description,
        requires=("output",),
        higher_is_better=kind.higher_is_better,
        options={"context": list(configured) if configured else None, "scale": scale},
        targets=("run", "llm", "retrieval"),
    )
    return (
        scorer.preprocess(
            build.step("preprocess", CLAIMS_INSTRUCTIONS, Claims, _require_context(configured), when_empty=_no_claims)
        )
        .analyze(
            build.step(
                "analyze",
                kind.instructions,
                ClaimVerdicts,
                _check_prompt(configured, kind.verb),
                when_empty=lambda _: {"verdicts": []},
                expect=one_verdict_per_claim,
            )
        )
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )


faithfulness = judged_scorer("faithfulness")(_grounding_scorer)
hallucination = judged_scorer("hallucination")(_grounding_scorer)
