"""Property tests: the fast implementations agree with naive ones written straight from the definitions."""

import re
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from spanscore.scorers.code.completeness import coverage
from spanscore.scorers.code.content_similarity import dice_similarity
from spanscore.scorers.code.english import strip_edge_punctuation
from spanscore.scorers.code.keyword_coverage import strip_tags
from spanscore.scorers.code.text import JS_WHITESPACE, js_trim, utf16
from spanscore.scorers.code.textual_difference import similarity_ratio
from spanscore.scorers.code.tone_consistency import sentences

# A small alphabet makes overlaps likely; the emoji exercises UTF-16 surrogate handling.
TEXT = st.text(alphabet="ab c\t😀é", max_size=12)


def _naive_lcs(a: str, b: str) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT)
def test_ratio_is_twice_lcs_over_total_utf16_units(a: str, b: str) -> None:
    ratio = similarity_ratio(a, b)
    if a == b:
        assert ratio == 1.0
    elif not a or not b:
        assert ratio == 0.0
    else:
        ua, ub = utf16(a), utf16(b)
        assert ratio == 2 * _naive_lcs(ua, ub) / (len(ua) + len(ub))


def _naive_dice(a: str, b: str) -> float:
    a, b = utf16("".join(a.split())), utf16("".join(b.split()))
    if a == b:
        return 1.0
    if len(a) < 2 or len(b) < 2:
        return 0.0
    remaining = Counter(a[i : i + 2] for i in range(len(a) - 1))
    shared = 0
    for i in range(len(b) - 1):
        if remaining[b[i : i + 2]] > 0:
            remaining[b[i : i + 2]] -= 1
            shared += 1
    return 2 * shared / (len(a) + len(b) - 2)


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT)
def test_dice_matches_the_definition_and_is_symmetric(a: str, b: str) -> None:
    assert dice_similarity(a, b) == _naive_dice(a, b)
    assert dice_similarity(a, b) == dice_similarity(b, a)
    assert 0.0 <= dice_similarity(a, b) <= 1.0


WORDS = st.lists(st.text(alphabet="abcde", min_size=1, max_size=6), max_size=8)


@given(WORDS, WORDS)
def test_coverage_is_a_fraction_and_self_coverage_is_complete(inp: list[str], out: list[str]) -> None:
    assert 0.0 <= coverage(inp, out) <= 1.0
    if inp:
        assert coverage(inp, inp) == 1.0


def _naive_covers(element: str, candidate: str) -> bool:
    if len(element) <= 3:
        return element == candidate
    longer, shorter = (element, candidate) if len(element) > len(candidate) else (candidate, element)
    return shorter in longer and len(shorter) / len(longer) > 0.6


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet="ab", min_size=1, max_size=14), max_size=8, unique=True), WORDS.map(dict.fromkeys))
def test_coverage_matches_the_pairwise_definition(inp: list[str], out_keys: dict[str, None]) -> None:
    """The substring lookup finds exactly the pairs the reference's every-with-every comparison finds."""
    out = list(out_keys)
    naive = 1.0 if not inp and not out else 0.0
    if inp:
        naive = sum(1 for e in inp if e in out or any(_naive_covers(e, s) for s in out)) / len(inp)
    assert coverage(inp, out) == naive


PUNCTUATED = st.text(alphabet="ab_'-.!é1 ½\u0301,;:?<>\n\t\u00a0\u2003\ufeff", max_size=16)


@given(PUNCTUATED)
def test_the_one_pass_scans_equal_the_reference_patterns(text: str) -> None:
    assert sentences(text) == re.findall(r"[^.!?]+[.!?]+", text)
    assert strip_tags(text) == re.sub(r"<[^>]+>", "", text)
    assert strip_edge_punctuation(text) == re.sub(r"^[^\w']+|[^\w']+$", "", text)
    assert js_trim(text) == re.sub(f"^[{JS_WHITESPACE}]+|[{JS_WHITESPACE}]+$", "", text)
