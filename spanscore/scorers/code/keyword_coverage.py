"""``keyword_coverage``: the share of the input's keywords that the output repeats.

Keywords are whitespace-separated words with surrounding punctuation removed,
lower-cased, without pure numbers and without English stop words (the SMART
list, shipped in ``data/stopwords_en.txt``; the reference's keyword-extractor
uses the same list). Matching is exact on the lower-cased keyword. An input
without keywords scores 1 whatever the output holds: that is what
@mastra/evals 1.10.2 does, while the seed docs say 0 when only one side is
empty (see docs/scorers.md).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Any

from spanscore.scorers.base import Scorer, StepContext, create_scorer
from spanscore.scorers.code.text import JS_WHITESPACE, input_text, js_trim, output_text
from spanscore.scorers.registry import register

VERSION = "1"

_WORD_SPLIT = re.compile(f"[{JS_WHITESPACE}]")
_URL = re.compile(r"https?://")
_STRIP = re.compile("[.,;!?():\"\u201c\u201d\u2018\u2019]|^'|'\\Z")
_SHORT_SYMBOL = re.compile("[_@&#]")
_ALL_DIGITS = re.compile("[0-9]+")


def strip_tags(text: str) -> str:
    """``text`` without HTML-like tags, as the reference's ``/<[^>]+>/g`` removes them, in one pass.

    The pattern rescans to the end of the text from every ``<`` that has no ``>`` after it (quadratic in
    a text of ``<``); here each ``<`` looks for the next ``>`` once, and a ``<`` with none ends the search.
    """
    pieces: list[str] = []
    position = 0
    while (start := text.find("<", position)) >= 0:
        close = text.find(">", start + 1)
        if close < 0:
            break
        if close == start + 1:  # "<>" holds no tag: the "<" is text
            pieces.append(text[position : start + 1])
        else:
            pieces.append(text[position:start])
        position = start + 1 if close == start + 1 else close + 1
    pieces.append(text[position:])
    return "".join(pieces)


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """The English stop words, loaded once from the package data."""
    text = resources.files("spanscore.scorers.code").joinpath("data/stopwords_en.txt").read_text(encoding="utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def extract_keywords(text: str) -> list[str]:
    """The keywords of ``text`` in first-seen order, lower-cased and de-duplicated."""
    text = js_trim(strip_tags(text))
    if not text:
        return []
    stop = stop_words()
    keywords: dict[str, None] = {}
    for raw in _WORD_SPLIT.split(text):
        word = raw if _URL.search(raw) else _STRIP.sub("", raw)
        if len(word) == 1:
            word = _SHORT_SYMBOL.sub("", word)
        if not word or _ALL_DIGITS.fullmatch(word):
            continue
        lowered = word.lower()
        if lowered not in stop:
            keywords.setdefault(lowered, None)
    return list(keywords)


@register("keyword_coverage")
def keyword_coverage() -> Scorer:
    """Build the scorer (it takes no options)."""

    def preprocess(context: StepContext) -> dict[str, Any]:
        return {
            "reference_keywords": extract_keywords(input_text(context.run)),
            "response_keywords": extract_keywords(output_text(context.run)),
        }

    def analyze(context: StepContext) -> dict[str, int]:
        reference, response = (
            context.preprocess_result["reference_keywords"],
            context.preprocess_result["response_keywords"],
        )
        present = set(response)
        return {"total_keywords": len(reference), "matched_keywords": sum(1 for k in reference if k in present)}

    def generate_score(context: StepContext) -> float:
        counts = context.analyze_result
        return 1.0 if counts["total_keywords"] == 0 else counts["matched_keywords"] / counts["total_keywords"]

    def generate_reason(context: StepContext) -> str:
        counts = context.analyze_result
        if counts["total_keywords"] == 0:
            return "the input has no keywords, so there is nothing to cover"
        return f"the output covers {counts['matched_keywords']} of {counts['total_keywords']} input keywords"

    return (
        create_scorer(
            "keyword_coverage",
            version=VERSION,
            description="Share of the input's keywords (stop words removed) that appear in the output.",
            requires=("input", "output"),
        )
        .preprocess(preprocess)
        .analyze(analyze)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
