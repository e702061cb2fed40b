"""``tone_consistency``: is the output's tone steady, or close to a reference tone?

With ``reference_tone`` (a sample text in the wanted tone) the score is
``max(0, 1 - |comparative(output) - comparative(reference_tone)|)``. Without
it the output is split into sentences (runs ending in ``.``, ``!`` or ``?``;
trailing text without an end mark is ignored, as in the reference) and the
score is ``max(0, 1 - variance)`` of the per-sentence comparative sentiment.
Sentiment is lexicon-based (see ``sentiment.py``).

The reference splits with ``/[^.!?]+[.!?]+/g``. As a backtracking pattern that is quadratic on text
without an end mark (every start position scans to the end before failing: 64,000 characters took
19 s, holding the GIL), so ``sentences`` finds the same pieces with one pass over the end marks.
"""

from __future__ import annotations

import re
from typing import Any

from spanscore.scorers.base import Scorer, StepContext, create_scorer
from spanscore.scorers.bounds import capped
from spanscore.scorers.code.options import optional_str
from spanscore.scorers.code.sentiment import analyze_sentiment
from spanscore.scorers.code.text import output_text
from spanscore.scorers.registry import register

VERSION = "1"

_END_MARKS = re.compile(r"[.!?]+")


def sentences(text: str) -> list[str]:
    """What ``/[^.!?]+[.!?]+/g`` finds: each run of end marks with the non-empty text before it, in one pass."""
    found: list[str] = []
    start = 0
    for marks in _END_MARKS.finditer(text):
        if marks.start() > start:
            found.append(text[start : marks.end()])
        start = marks.end()
    return found


def compare_tone(text: str, reference_tone: str) -> dict[str, Any]:
    response = analyze_sentiment(text).comparative
    reference = analyze_sentiment(reference_tone).comparative
    difference = abs(response - reference)
    return {
        "score": max(0.0, 1.0 - difference),
        "response_sentiment": response,
        "reference_sentiment": reference,
        "difference": difference,
    }


def tone_stability(text: str) -> dict[str, Any]:
    pieces = sentences(text) or [text]
    values = [analyze_sentiment(s).comparative for s in pieces]
    average = sum(values) / len(values)
    variance = sum((v - average) ** 2 for v in values) / len(values)
    return {"score": max(0.0, 1.0 - variance), "avg_sentiment": average, "sentiment_variance": variance}


@register("tone_consistency")
def tone_consistency(*, reference_tone: str | None = None) -> Scorer:
    """Build the scorer; ``reference_tone`` switches from stability to comparison mode."""
    optional_str("reference_tone", reference_tone)

    def preprocess(context: StepContext) -> dict[str, Any]:
        text = output_text(context.run)
        return compare_tone(text, capped(reference_tone, "reference_tone")) if reference_tone else tone_stability(text)

    def generate_reason(context: StepContext) -> str:
        step = context.preprocess_result
        if "difference" in step:
            return f"sentiment differs from the reference tone by {step['difference']:.3f}"
        return f"sentiment varies across sentences with variance {step['sentiment_variance']:.3f}"

    return (
        create_scorer(
            "tone_consistency",
            version=VERSION,
            description="Sentiment stability across the output, or closeness to a reference tone.",
            requires=("output",),
            options={"reference_tone": reference_tone},
        )
        .preprocess(preprocess)
        .generate_score(lambda c: c.preprocess_result["score"])
        .generate_reason(generate_reason)
    )
