"""``content_similarity``: how alike the input and the output read, character by character.

Compares the run's input text with its output text (as @mastra/evals 1.10.2
does; the seed docs suggested ground truth) with the Sørensen–Dice
coefficient over character bigrams, after optional lower-casing and
whitespace collapsing. The reference computes the coefficient with all
whitespace removed; rapidfuzz is not used here because Dice over bigram
multisets is a counter intersection, which ``collections.Counter`` does in C.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from spanscore.scorers.base import Scorer, StepContext
from spanscore.scorers.code.comparison import compared_texts, comparison_scorer
from spanscore.scorers.code.options import require_bool
from spanscore.scorers.code.text import WHITESPACE_RUN, collapse_whitespace, compare_side, utf16
from spanscore.scorers.registry import register

VERSION = "1"


def dice_similarity(first: str, second: str) -> float:
    """Sørensen–Dice on character bigrams with whitespace removed; 1 for equal strings, 0 below two characters."""
    first, second = utf16(WHITESPACE_RUN.sub("", first)), utf16(WHITESPACE_RUN.sub("", second))
    if first == second:
        return 1.0
    if len(first) < 2 or len(second) < 2:
        return 0.0
    bigrams_first = Counter(first[i : i + 2] for i in range(len(first) - 1))
    bigrams_second = Counter(second[i : i + 2] for i in range(len(second) - 1))
    overlap = sum((bigrams_first & bigrams_second).values())
    return 2.0 * overlap / (len(first) + len(second) - 2)


@register("content_similarity")
def content_similarity(
    *, ignore_case: bool = True, ignore_whitespace: bool = True, compare_with: str = "input"
) -> Scorer:
    """Build the scorer. Each option defaults on its own (unlike the reference, see docs/scorers.md).

    ``compare_with="ground_truth"`` compares the output with the run's ground
    truth instead of its input (what the seed documents describe).
    """
    side = compare_side(compare_with)
    require_bool("ignore_case", ignore_case)
    require_bool("ignore_whitespace", ignore_whitespace)

    def preprocess(context: StepContext) -> dict[str, Any]:
        processed_input, processed_output = compared_texts(context.run, side)
        if ignore_case:
            processed_input, processed_output = processed_input.lower(), processed_output.lower()
        if ignore_whitespace:
            processed_input, processed_output = (
                collapse_whitespace(processed_input),
                collapse_whitespace(processed_output),
            )
        return {"processed_input": processed_input, "processed_output": processed_output}

    def generate_score(context: StepContext) -> float:
        step = context.preprocess_result
        return dice_similarity(step["processed_input"], step["processed_output"])

    options = {"ignore_case": ignore_case, "ignore_whitespace": ignore_whitespace}
    return (
        comparison_scorer("content_similarity", VERSION, side, "Character-bigram (Dice) similarity", options)
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(
            lambda c: f"{side.replace('_', ' ')} and output are {c.score:.2f} similar by character bigrams"
        )
    )
