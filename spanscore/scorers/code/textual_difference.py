"""``textual_difference``: sequence-matching similarity between the input and the output text.

The score is the ratio ``2 * LCS / (len_in + len_out)`` over characters (what
Python's ``difflib`` calls a ratio, computed exactly as an LCS): 1 for equal
texts, 0 when one side is empty. rapidfuzz's Indel distance gives that LCS in
bit-parallel C; lengths count UTF-16 units as the reference does. The
analysis also reports confidence (1 - relative length difference), the
number of word changes and the length difference. The seed docs multiply
ratio by confidence; @mastra/evals 1.10.2 returns the ratio alone, and so do we.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rapidfuzz.distance import Indel

from spanscore.scorers.base import Scorer, StepContext
from spanscore.scorers.code.comparison import compared_texts, comparison_scorer
from spanscore.scorers.code.text import WHITESPACE_RUN, collapse_whitespace, compare_side, utf16
from spanscore.scorers.registry import register

VERSION = "1"


def similarity_ratio(first: str, second: str) -> float:
    """``2 * LCS / total`` over UTF-16 units; 1 for equal strings, 0 if exactly one is empty."""
    if first == second:
        return 1.0
    if not first or not second:
        return 0.0
    first, second = utf16(first), utf16(second)
    common = (len(first) + len(second) - Indel.distance(first, second)) / 2
    return 2.0 * common / (len(first) + len(second))


def _words(text: str) -> list[str]:
    return [w for w in WHITESPACE_RUN.split(text) if w]


def count_changes(first: str, second: str) -> int:
    """Word-level change count: words that do not pair up with an equal word on the other side."""
    first_normalized, second_normalized = collapse_whitespace(first), collapse_whitespace(second)
    if first_normalized == second_normalized:
        if first == second:
            return 0
        return abs(len(_words(first)) - len(_words(second))) or 1
    first_words, second_words = _words(first_normalized), _words(second_normalized)
    if not first_words or not second_words:
        return len(first_words) + len(second_words)
    common = sum((Counter(first_words) & Counter(second_words)).values())
    return max(len(first_words), len(second_words)) - common


def analyze_difference(first: str, second: str) -> dict[str, Any]:
    longest = max(len(utf16(first)), len(utf16(second)))
    length_diff = abs(len(utf16(first)) - len(utf16(second))) / longest if longest else 0.0
    return {
        "ratio": similarity_ratio(first, second),
        "confidence": 1.0 - length_diff,
        "changes": count_changes(first, second),
        "length_diff": length_diff,
    }


@register("textual_difference")
def textual_difference(*, compare_with: str = "input") -> Scorer:
    """Build the scorer; ``compare_with="ground_truth"`` compares the output with the ground truth instead."""
    side = compare_side(compare_with)

    def preprocess(context: StepContext) -> dict[str, Any]:
        return analyze_difference(*compared_texts(context.run, side))

    def generate_reason(context: StepContext) -> str:
        step = context.preprocess_result
        return f"similarity ratio {step['ratio']:.2f} with {step['changes']} word change(s)"

    return (
        comparison_scorer("textual_difference", VERSION, side, "Sequence-matching similarity ratio", {})
        .preprocess(preprocess)
        .generate_score(lambda c: c.preprocess_result["ratio"])
        .generate_reason(generate_reason)
    )
