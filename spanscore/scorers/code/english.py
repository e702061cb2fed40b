"""Light English verb-phrase handling for ``completeness``: verbs to their infinitive, auxiliaries dropped.

The reference extracts elements with the JavaScript NLP library compromise,
whose ``verbs().toInfinitive()`` rewrites every verb phrase in place ("has
been writing" -> "write", "was delayed" -> "delay", "is" -> "be") before
the terms are read. This module reproduces that rewrite with a small set of
context rules over whitespace tokens, and lemminflect (which ships its
lexicon in the wheel) for the lemma of a verb form and for which parts of
speech a word can take. It is an approximation of a rule-based tagger, not a
port: docs/scorers.md reports how often the element sets agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from lemminflect import getAllLemmas  # type: ignore[import-untyped]

BE = frozenset({"am", "is", "are", "was", "were", "be", "been", "being"})
HAVE = frozenset({"has", "have", "had", "having"})
DO = frozenset({"do", "does", "did"})
MODALS = frozenset({"will", "would", "shall", "should", "can", "could", "may", "might", "must"})
AUXILIARIES = BE | HAVE | DO | MODALS
NEGATIONS = frozenset({"not", "never"})
INTENSIFIERS = frozenset({"very", "so", "really", "too", "quite", "just", "also", "still", "already"})
CONJUNCTIONS = frozenset({"and", "but", "or", "then"})
PLURAL_SUBJECTS = frozenset({"i", "you", "we", "they"})
NUMBERS = frozenset(
    {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve", "hundred"}
)
# Verbs whose "-ing" form the reference's lexicon knows as an adjective ("was annoying", "were confusing").
FEELING_VERBS = frozenset(
    {
        "amaze", "amuse", "annoy", "bore", "charm", "confuse", "depress", "disappoint", "embarrass", "encourage",
        "excite", "exhaust", "fascinate", "frighten", "frustrate", "inspire", "interest", "overwhelm", "please",
        "relax", "satisfy", "shock", "stun", "surprise", "terrify", "thrill", "tire", "worry",
    }
)  # fmt: skip
SUBJECTS = frozenset({"i", "you", "he", "she", "it", "we", "they", "who", "which", "that", "everyone", "nothing"})
NOUN_MARKERS = frozenset(
    {
        "the", "a", "an", "this", "these", "those", "my", "your", "his", "her", "its", "our", "their",
        "some", "any", "every", "each", "no", "all", "more", "most", "many", "much", "few", "several",
        "of", "in", "on", "at", "by", "for", "with", "about", "from", "into", "over", "under", "after",
        "before", "between", "through", "during", "without", "within", "than", "like",
    }
)  # fmt: skip
SUBJECT_CONTRACTIONS = {"'s": "is", "'re": "are", "'m": "am", "'ve": "have", "'ll": "will", "'d": "would"}
NEGATED = {"don't": "do", "doesn't": "does", "didn't": "did", "can't": "do", "won't": "will", "isn't": "is"}

_CLAUSE_ENDS = ".,;:!?"


def _keeps(char: str) -> bool:
    """What the class of word characters plus the apostrophe matches: ``isalnum``, ``_`` and ``'``."""
    return char.isalnum() or char in "_'"


def strip_edge_punctuation(token: str) -> str:
    r"""``token`` without the non-word characters at either end (apostrophes stay), in one pass.

    The pattern ``^[^\w']+|[^\w']+$`` does the same, but its second branch scans every inner run of
    punctuation to the end of the token before failing: quadratic in one long token of dashes.
    """
    start, end = 0, len(token)
    while start < end and not _keeps(token[start]):
        start += 1
    while end > start and not _keeps(token[end - 1]):
        end -= 1
    return token[start:end]


@lru_cache(maxsize=65536)
def _lemmas(word: str) -> dict[str, tuple[str, ...]]:
    return dict(getAllLemmas(word))


def _verb_lemma(word: str) -> str | None:
    lemmas = _lemmas(word).get("VERB")
    return lemmas[0] if lemmas else None


def _expand(token: str) -> list[tuple[str, bool, bool]]:
    """Split one whitespace token into (word, ends_clause, contracted) triples, expanding contractions."""
    ends_clause = bool(token) and token[-1] in _CLAUSE_ENDS
    word = strip_edge_punctuation(token).lower().replace("\u2019", "'")
    if not word:
        return []
    if word in NEGATED:
        return [(NEGATED[word], False, False), ("not", ends_clause, False)]
    if word.endswith("n't") and len(word) > 3:
        return [(word[:-3], False, False), ("not", ends_clause, False)]
    for suffix, auxiliary in SUBJECT_CONTRACTIONS.items():
        if word.endswith(suffix) and word[: -len(suffix)] in SUBJECTS:
            # The reference keeps the contracted pronoun as a noun phrase, so its fragment ("s", "re") stays too.
            return [(word[: -len(suffix)], False, False), (suffix[1:], False, False), (auxiliary, ends_clause, True)]
    return [(word, ends_clause, False)]


def _is_main_verb(word: str, previous: str | None, context: _Context) -> bool:
    """Decide whether a non-auxiliary word acts as a verb here."""
    lemmas = _lemmas(word)
    if "VERB" not in lemmas:
        return False
    base = lemmas["VERB"][0] == word
    if previous in NOUN_MARKERS or previous in NUMBERS or (previous or "x").isdigit() or context.previous_was_verb:
        return False
    if previous in BE:
        # After a form of "be" only a participle is a verb ("was delayed", "are investigating the outage");
        # "is fast" is an adjective, and so are "-ing" forms of feeling verbs ("was annoying").
        # After a contracted one ("I'm thrilled", "you've done") a participle that reads as an adjective stays.
        adjective = word.endswith("ing") and (lemmas["VERB"][0] in FEELING_VERBS or "ADJ" in lemmas)
        if context.after_contraction:
            adjective = adjective or "ADJ" in lemmas or lemmas["VERB"][0] in FEELING_VERBS
        return not base and not word.endswith("s") and not adjective
    ambiguous = "NOUN" in lemmas or "ADJ" in lemmas or "ADV" in lemmas
    if not ambiguous:
        return True
    if previous is None or context.clause_start:
        return word.endswith("ing") or base
    if previous in SUBJECTS or previous in AUXILIARIES or previous in NEGATIONS or previous == "to":
        return True
    if previous.endswith("ly"):
        return True
    inflected_s = word.endswith("s") and not base
    if previous in CONJUNCTIONS:
        return inflected_s
    previous_lemmas = _lemmas(previous)
    if "ADJ" in previous_lemmas and "NOUN" not in previous_lemmas:
        return False
    follows_noun = "NOUN" in previous_lemmas or previous.endswith("s")
    if follows_noun and word.endswith("ed") and not base:
        return True  # a past tense after its subject: "the library extended"
    following = context.following
    next_is_verb = following is not None and "VERB" in _lemmas(following) and "NOUN" not in _lemmas(following)
    plural_subject = previous.endswith("s") and previous_lemmas.get("NOUN", (previous,))[0] != previous
    return follows_noun and (inflected_s or (base and plural_subject)) and not next_is_verb


@dataclass(slots=True)
class _Context:
    following: str | None = None
    clause_start: bool = True
    ends_clause: bool = False
    previous_was_verb: bool = False
    after_contraction: bool = False


def infinitive_words(text: str) -> list[str]:
    """The words of ``text`` after rewriting verb phrases to their infinitive (auxiliaries dropped)."""
    words = [triple for token in text.split() for triple in _expand(token)]
    result: list[str] = []
    pending: list[str] = []  # auxiliaries waiting to see whether a main verb follows
    previous: str | None = None
    subject = ""
    context = _Context()
    for index, (word, ends_clause, contracted) in enumerate(words):
        context.following = words[index + 1][0] if index + 1 < len(words) else None
        context.ends_clause = ends_clause
        is_verb = False
        if word in AUXILIARIES:
            if word == "do" and context.clause_start and context.following == "not":
                word = "does"  # the reference reads a clause-initial "don't" as "does not"
            pending.append(word)
        elif pending and (word in NEGATIONS or word in INTENSIFIERS or word.endswith("ly")):
            result.append(word)
            word = pending[-1]  # an adverb inside a verb phrase does not end it
        elif _is_main_verb(word, pending[-1] if pending else previous, context):
            if pending and pending[0] in DO and "not" in result[-2:]:
                result.insert(len(result) - 1, pending[0])
            elif not pending and previous == "never":
                # The reference rewrites "never arrived" as "does not arrive" (keeping "never").
                result.extend(("do" if subject in PLURAL_SUBJECTS else "does", "not"))
            pending.clear()
            result.append(_verb_lemma(word) or word)
            is_verb = True
        else:
            _flush(pending, result)
            result.append(word)
        if ends_clause:
            _flush(pending, result)
        if not is_verb and word not in AUXILIARIES and word not in NEGATIONS:
            subject = word
        previous, context.clause_start, context.previous_was_verb = word, ends_clause, is_verb
        context.after_contraction = contracted or (context.after_contraction and word in AUXILIARIES)
    _flush(pending, result)
    return result


def _flush(pending: list[str], result: list[str]) -> None:
    """Auxiliaries not followed by a main verb: the last one stands as the verb (in infinitive form)."""
    if not pending:
        return
    last = pending[-1]
    if last in BE:
        result.append("be")
    elif last in HAVE:
        result.append("have")
    elif last in DO:
        result.append("do")
    else:
        result.append(last)
    pending.clear()
