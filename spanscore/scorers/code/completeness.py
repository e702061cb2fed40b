"""``completeness``: how many of the input's key elements the output covers.

Elements are the words of the text after verb phrases are rewritten to their
infinitive (see ``english.py``), normalised (accents stripped, lower-cased,
split on anything that is not ``a-z0-9``) and de-duplicated. An input
element is covered by an output element when they are equal (elements of
three characters or fewer) or when the shorter is a substring of the longer
and more than 60% of its length. Score = covered / input elements; with no
input elements, 1 if the output has none either, else 0 (as the reference).

The reference compares every input element with every output element, which
grows with the product of the two counts (2,000 distinct words a side took
half a second). Here the pairs are found from the other end: the substrings
of one element long enough to count are looked up among the other side's
elements, which is linear in the text. That is done for elements of up to
``FUZZY_MAX_CHARS`` characters (words are far shorter); a longer element, a
hash or a base64 blob, covers and is covered only by an equal one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
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


FUZZY_MAX_CHARS = 64
"""Elements up to this long cover by substring; longer ones only when equal."""


def _long_parts(text: str, shortest: int) -> Iterator[str]:
    """The substrings of ``text`` of at least ``shortest`` characters, shorter than ``text`` itself."""
    for length in range(shortest, len(text)):
        for start in range(len(text) - length + 1):
            yield text[start : start + length]


def _over_60_percent(length: int) -> int:
    """The fewest characters that are more than 60% of ``length`` (``5k > 3n`` is ``k / n > 0.6``, exactly)."""
    return 3 * length // 5 + 1


def coverage(input_elements: list[str], output_elements: list[str]) -> float:
    """Share of input elements covered.

    Covered: equal to an output element, or (elements over 3 characters) one of the two inside the other
    while the shorter is more than 60% as long as the longer.
    """
    if not input_elements:
        return 1.0 if not output_elements else 0.0
    present, wanted = set(output_elements), set(input_elements)
    covered = wanted & present
    for element in wanted - covered:  # a shorter output element inside the input element
        if 3 < len(element) <= FUZZY_MAX_CHARS and not present.isdisjoint(
            _long_parts(element, _over_60_percent(len(element)))
        ):
            covered.add(element)
    for candidate in present:  # the input element inside a longer output element
        if len(candidate) <= FUZZY_MAX_CHARS:
            shortest = max(4, _over_60_percent(len(candidate)))
            covered.update(part for part in _long_parts(candidate, shortest) if part in wanted)
    return sum(1 for e in input_elements if e in covered) / len(input_elements)


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
