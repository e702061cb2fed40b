"""``completeness``: how many of the input's key elements the output covers.

Elements are the words of the text after verb phrases are rewritten to their
infinitive (see ``english.py``), normalised (accents stripped, lower-cased,
split on anything that is not ``a-z0-9``) and de-duplicated. An input
element is covered by an output element when they are equal (elements of
three characters or fewer) or when the shorter is a substring of the longer
and more than 60% of its length. Score = covered / input elements; with no
input elements, 1 if the output has none either, else 0 (as the reference).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from spanscore.scorers.base import Scorer, StepContext, create_scorer
from spanscore.scorers.code.english import infinitive_words
from spanscore.scorers.code.text import input_text, js_trim, output_text
from spanscore.scorers.registry import register

VERSION = "1"

_COMBINING_MARKS = re.compile("[\u0300-\u036f]")
_NOT_ALPHANUMERIC = re.compile("[^a-z0-9]+")


def normalize(text: str) -> str:
    return _COMBINING_MARKS.sub("", unicodedata.normalize("NFD", text)).lower()


def extract_elements(text: str) -> list[str]:
    """The de-duplicated elements of ``text`` in first-seen order."""
    seen: dict[str, None] = {}
    for word in infinitive_words(normalize(js_trim(text))):
        for part in _NOT_ALPHANUMERIC.sub(" ", word).split():
            seen.setdefault(part, None)
    return list(seen)


def _covers(element: str, candidate: str) -> bool:
    if len(element) <= 3:
        return element == candidate
    longer, shorter = (element, candidate) if len(element) > len(candidate) else (candidate, element)
    return shorter in longer and len(shorter) / len(longer) > 0.6


def coverage(input_elements: list[str], output_elements: list[str]) -> float:
    if not input_elements:
        return 1.0 if not output_elements else 0.0
    exact = set(output_elements)
    covered = sum(1 for e in input_elements if e in exact or any(_covers(e, s) for s in output_elements))
    return covered / len(input_elements)


@register("completeness")
def completeness() -> Scorer:
    """Build the scorer (it takes no options)."""

    def preprocess(context: StepContext) -> dict[str, Any]:
        input_elements = extract_elements(input_text(context.run))
        output_elements = extract_elements(output_text(context.run))
        present = set(output_elements)
        return {
            "input_elements": input_elements,
            "output_elements": output_elements,
            "missing_elements": [e for e in input_elements if e not in present],
            "element_counts": {"input": len(input_elements), "output": len(output_elements)},
        }

    def generate_score(context: StepContext) -> float:
        step = context.preprocess_result
        return coverage(step["input_elements"], step["output_elements"])

    def generate_reason(context: StepContext) -> str:
        counts = context.preprocess_result["element_counts"]
        missing = context.preprocess_result["missing_elements"]
        return f"{counts['input']} input element(s), {len(missing)} not repeated verbatim in the output"

    return (
        create_scorer(
            "completeness",
            version=VERSION,
            description="Share of the input's key words (verbs in infinitive form) that the output covers.",
            requires=("input", "output"),
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
