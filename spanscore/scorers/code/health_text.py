"""The text checks of ``answer_health``: a broken answer, told apart from an answer *about* breakage.

Each check reads a ``Texts`` (the answer, the answer outside code, its sentences, the question) and
returns a one-sentence defect or None. Three rules keep answers about breakage healthy:

- text inside code (fenced blocks, inline backquotes) is quoted, never the answer's own state;
- what the question already says is its topic: an error, token or placeholder the question quotes
  is not a defect when the answer repeats it;
- a refusal, an error heading or a promise is a defect only when no answer follows it.

Every pattern runs on RE2 and every loop is one pass, so a check costs time linear in its (capped)
input whatever the text.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import re2

from spanscore.scorers.code import health_phrases as phrases

_CODE = re2.compile(r"(?s)```.*?(?:```|\z)|`[^`\n]*`")
_ENDS = frozenset(".!?。！？।\n")
_REFUSAL = re2.compile(phrases.REFUSAL_OPENING)
_IDIOM = re2.compile(phrases.IDIOM_AFTER_DECLINE)
_COURTESY = re2.compile(phrases.COURTESY)
_FALLBACK = re2.compile(phrases.FALLBACK)
_TRY_AGAIN = re2.compile(phrases.TRY_AGAIN)
_PROMISE = re2.compile(phrases.PROMISE)
_ACK = re2.compile(phrases.ACKNOWLEDGEMENT)
_CONTINUATION = re2.compile(
    r"(?i):\s*|[,;]?\s+(?:but|however|though|pero|sin embargo|mais|cependant|aber|jedoch|mas|porém|ma|però|но|однако)"
    r"\s+|但是?|不过|ですが|하지만|लेकिन|لكن"
)
ANSWER_WORDS = 18
"""Words of substance after a refusal or a promise that make it an answer ("I can't X, but here is Y...")."""


@dataclass(frozen=True, slots=True)
class Texts:
    """What the text checks read, computed once per run."""

    answer: str
    prose: str
    question: str
    system: str
    sentences: tuple[str, ...]

    @classmethod
    def of(cls, answer: str, question: str, system: str) -> Texts:
        prose = _CODE.sub(" ", answer).replace("’", "'")
        return cls(answer, prose, question.replace("’", "'"), system, _sentences(prose))

    def quoted(self, text: str) -> bool:
        """Whether the question already holds ``text``: then it is the question's topic, not a defect."""
        return bool(text.strip()) and text.strip().lower() in self.question.lower()


def _sentences(prose: str) -> tuple[str, ...]:
    """The prose cut after each run of sentence-ending marks and at each line break (one pass)."""
    found: list[str] = []
    start, size = 0, len(prose)
    index = 0
    while index < size:
        if prose[index] in _ENDS:
            while index + 1 < size and prose[index + 1] in _ENDS and prose[index + 1] != "\n":
                index += 1
            piece = prose[start : index + 1].strip()
            if piece:
                found.append(piece)
            start = index + 1
        index += 1
    tail = prose[start:].strip()
    return (*found, tail) if tail else tuple(found)


def _is_dense(char: str) -> bool:
    """A CJK ideograph, kana or Hangul syllable: a script written without spaces."""
    code = ord(char)
    return 0x3040 <= code < 0xA000 or 0xAC00 <= code < 0xD7B0 or 0xF900 <= code < 0xFB00


def words(text: str) -> int:
    """Words in ``text``, counting two CJK characters as one word (CJK has no spaces)."""
    dense = sum(1 for char in text if char >= "\u3040" and _is_dense(char))
    return len(text.split()) + dense // 2


def substance(sentences: tuple[str, ...] | list[str]) -> int:
    """Words in the sentences that are neither courtesy, refusal, apology-fallback nor promise."""
    total = 0
    for sentence in sentences:
        if _COURTESY.search(sentence) or _PROMISE.search(sentence) or _ACK.search(sentence):
            continue
        if _REFUSAL.search(sentence) and not _IDIOM.search(sentence):
            total += words(_after_continuation(sentence))
            continue
        total += words(sentence)
    return total


def _after_continuation(sentence: str) -> str:
    """The part of a declining sentence after ", but" / ":" and the like ("I can't X, but here is Y")."""
    match = _CONTINUATION.search(sentence)
    return sentence[match.end() :] if match else ""


def refusal(texts: Texts) -> str | None:
    """The answer opens by declining and no answer follows (a partial refusal that then answers is healthy)."""
    if not texts.sentences:
        return None
    first = texts.sentences[0]
    match = _REFUSAL.search(first)
    if match is None or _IDIOM.search(first) or texts.quoted(match.group()):
        return None
    if substance(texts.sentences) >= ANSWER_WORDS or _has_structure(texts.prose):
        return None
    return f"the answer declines and answers nothing ({first[:80]!r})"


def filler_only(texts: Texts) -> str | None:
    """The whole answer promises work ("Let me check that for you.") and delivers none."""
    if not texts.sentences or words(texts.prose) > 40:
        return None
    promised = False
    for sentence in texts.sentences:
        if _PROMISE.search(sentence):
            promised = True
        elif not (_ACK.search(sentence) or _COURTESY.search(sentence)):
            return None
    return f"the answer only promises to do something ({texts.sentences[0][:80]!r})" if promised else None


def fallback(texts: Texts) -> str | None:
    """A stock failure message ("Sorry, something went wrong", "Agent stopped due to iteration limit") is the answer."""
    match = next((m for s in texts.sentences[:2] if (m := _FALLBACK.search(s))), None)
    if match is None and texts.sentences and all(_TRY_AGAIN.search(s) or _COURTESY.search(s) for s in texts.sentences):
        match = _TRY_AGAIN.search(texts.sentences[0])  # nothing but "please try again later"
    if match is None or texts.quoted(match.group()):
        return None
    if substance([s for s in texts.sentences if not _FALLBACK.search(s)]) >= ANSWER_WORDS:
        return None
    return f"the answer is a stock failure message ({match.group()!r})"


def _has_structure(prose: str) -> bool:
    """A list of at least two items: an answer's shape, which a refusal or a fallback never has."""
    items = 0
    for line in prose.split("\n"):
        stripped = line.lstrip()
        if stripped[:2] in ("- ", "* ", "• ") or (stripped[:1].isdigit() and stripped[1:3] in (". ", ") ")):
            items += 1
    return items >= 2


def tool_call_answer(texts: Texts) -> str | None:
    """The answer is only a tool call (JSON) or a ReAct scratchpad without a final answer."""
    body = texts.answer.strip()
    if body.startswith("```"):
        body = body.strip("`").strip()
        body = body[4:] if body[:4].lower() == "json" else body
    if body[:1] in "[{":
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            value = None
        if _is_tool_call(value):
            return "the answer is a tool call, not an answer"
    return _scratchpad(texts.prose)


_TOOL_KEYS = ("tool", "tool_name", "toolName", "action")
_ARGUMENT_KEYS = ("arguments", "args", "parameters", "input", "tool_input", "action_input", "toolInput")


def _is_tool_call(value: Any) -> bool:
    """A call (a tool's name with concrete arguments), not a tool's definition (a description, a JSON Schema)."""
    if isinstance(value, list):
        return bool(value) and all(_is_tool_call(item) for item in value[:20])
    if not isinstance(value, dict) or _is_tool_schema(value):
        return False
    if isinstance(value.get("function"), dict) and "name" in value["function"]:
        return not _is_tool_schema(value["function"])
    if "tool_calls" in value or "function_call" in value:
        return True
    named = "name" in value or any(key in value for key in _TOOL_KEYS)
    return named and any(key in value for key in _ARGUMENT_KEYS) and len(value) <= 4


def _is_tool_schema(value: dict[str, Any]) -> bool:
    parameters = value.get("parameters", value.get("input_schema"))
    schema_like = isinstance(parameters, dict) and ("properties" in parameters or parameters.get("type") == "object")
    return "description" in value or schema_like


_REACT_LINE = re2.compile(r"(?i)^\W{0,4}(thought|action|action input|observation|final answer)\W{0,4}:")


def _scratchpad(prose: str) -> str | None:
    lines = [line for line in prose.strip().split("\n", 200)[:200] if line.strip()]
    labels = [match.group(1).lower() if (match := _REACT_LINE.search(line[:200])) else "" for line in lines]
    if not labels or not labels[0] or "final answer" in labels:
        return None
    if not {"action", "action input", "observation"} & set(labels):
        return None
    return "the answer is an agent's scratchpad (Thought/Action) without a final answer"


def repetition(texts: Texts) -> str | None:
    """The answer loops: one sentence fills much of it, or its end repeats a short unit over and over."""
    counted = Counter(_normal(s) for s in texts.sentences if words(s) >= 3)
    if counted:
        sentence, times = counted.most_common(1)[0]
        repeats = sum(count - 1 for count in counted.values())
        if times >= 3 and repeats * 2 >= len(texts.sentences) and sentence not in _normal(texts.question):
            return f"the answer repeats itself in a loop ({sentence[:60]!r} {times} times)"
    unit = _repeating_tail(texts.prose.rstrip()[-2000:])
    if unit is not None and not texts.quoted(unit):
        return f"the answer ends in a loop (repeats {unit[:40]!r})"
    return None


def _normal(sentence: str) -> str:
    kept = "".join(char if char.isalnum() else " " for char in sentence.lower())
    return " ".join(kept.split()) or sentence


def _repeating_tail(text: str) -> str | None:
    """A unit of at most 40 characters, holding two or more letters, that the text ends with at least 5 times."""
    size = len(text)
    for period in range(2, 41):
        run = 0
        for index in range(size - 1, period - 1, -1):
            if text[index] != text[index - period]:
                break
            run += 1
        if run >= 4 * period and run >= 30:
            unit = text[size - period :]
            if sum(ch.isalpha() for ch in unit) >= 2:
                return unit
    return None
