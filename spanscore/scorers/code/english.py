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

import re
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

_EDGE_PUNCTUATION = re.compile(r"^[^\w']+|[^\w']+$")
_CLAUSE_END = re.compile(r"[.,;:!?]$")


@lru_cache(maxsize=65536)
def _lemmas(word: str) -> dict[str, tuple[str, ...]]:
    return dict(getAllLemmas(word))


def _verb_lemma(word: str) -> str | None:
    lemmas = _lemmas(word).get("VERB")
    return lemmas[0] if lemmas else None


def _expand(token: str) -> list[tuple[str, bool]]:
    """Split one whitespace token into (word, ends_clause) pairs, expanding contractions."""
    ends_clause = bool(_CLAUSE_END.search(token))
    word = _EDGE_PUNCTUATION.sub("", token).lower().replace("\u2019", "'")
    if not word:
        return []
    if word in NEGATED:
        return [(NEGATED[word], False), ("not", ends_clause)]
    if word.endswith("n't") and len(word) > 3:
        return [(word[:-3], False), ("not", ends_clause)]
    for suffix, auxiliary in SUBJECT_CONTRACTIONS.items():
        if word.endswith(suffix) and word[: -len(suffix)] in SUBJECTS:
            # The reference keeps the contracted pronoun as a noun phrase, so its fragment ("s", "re") stays too.
            return [(word[: -len(suffix)], False), (suffix[1:], False), (auxiliary, ends_clause)]
    return [(word, ends_clause)]


def _is_main_verb(word: str, previous: str | None, context: _Context) -> bool:
    """Decide whether a non-auxiliary word acts as a verb here."""
    lemmas = _lemmas(word)
    if "VERB" not in lemmas:
        return False
    base = lemmas["VERB"][0] == word
    if previous in NOUN_MARKERS or context.previous_was_verb:
        return False
    if previous in BE:
        # After a form of "be" only a participle is a verb ("was delayed", "are investigating the outage");
        # "is fast" is an adjective, and so is a clause-final "-ing" ("was annoying.").
        return not base and not word.endswith("s") and not (word.endswith("ing") and context.ends_clause)
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
    following = context.following
    next_is_verb = following is not None and "VERB" in _lemmas(following) and "NOUN" not in _lemmas(following)
    return follows_noun and inflected_s and not next_is_verb


@dataclass(slots=True)
class _Context:
    following: str | None = None
    clause_start: bool = True
    ends_clause: bool = False
    previous_was_verb: bool = False


def infinitive_words(text: str) -> list[str]:
    """The words of ``text`` after rewriting verb phrases to their infinitive (auxiliaries dropped)."""
    words: list[tuple[str, bool]] = [pair for token in text.split() for pair in _expand(token)]
    result: list[str] = []
    pending: list[str] = []  # auxiliaries waiting to see whether a main verb follows
    previous: str | None = None
    context = _Context()
    for index, (word, ends_clause) in enumerate(words):
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
            pending.clear()
            result.append(_verb_lemma(word) or word)
            is_verb = True
        else:
            _flush(pending, result)
            result.append(word)
        if ends_clause:
            _flush(pending, result)
        previous, context.clause_start, context.previous_was_verb = word, ends_clause, is_verb
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
