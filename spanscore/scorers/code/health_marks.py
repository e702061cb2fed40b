"""Marks a broken answer leaves in its text: error output, template leftovers, chat-template tokens, another script.

Like ``health_text``, each check takes a ``Texts`` and returns a defect sentence or None, searches
only outside code, and leaves alone what the question itself quotes. All patterns are RE2.
"""

from __future__ import annotations

import json

import re2

from spanscore.scorers.code.health_text import Texts, words

_STACK_TRACE = re2.compile(
    r"(?m)Traceback \(most recent call last\):|^\s+at [\w.$<>\[\] ]+ \(?[^()\s]+:\d+:\d+\)?\s*$"
    r"|^\s+File \"[^\"\n]+\", line \d+|^\s+at [\w$.]+\([\w$]+\.java:\d+\)|Exception in thread \""
)
_STATUS = (
    r"bad request|unauthori[sz]ed|forbidden|not found|method not allowed|request time-?out|conflict|"
    r"payload too large|too many requests|internal server error|not implemented|bad gateway|"
    r"service unavailable|gateway time-?out"
)
_PAGE_TITLE = r"internal server error|bad gateway|service unavailable|gateway time-?out|too many requests"
"""Error-page titles that are errors without a status code beside them (single words such as "Conflict" are not)."""
_ERROR_HEAD = re2.compile(
    r"(?i)^\W{0,3}(?:"
    r"(?P<exc>(?:[a-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Timeout|Failure|Fault|Refused))(?::|\s*\(|\s*$)"
    r"|(?P<code>error code|error|exception|fatal|failed|failure)\s*[:\[(]"
    r"|http(?:/[\d.]+)?\s+(?P<status>[45]\d\d)\b"
    r"|(?P<code_status>[45]\d\d)\s*[-:]?\s*(?:" + _STATUS + r"|error)\b"
    r"|(?P<enum_status>[45]\d\d)\s+(?-i:[A-Z][A-Z_]{3,})\b"
    r"|(?P<phrase>" + _PAGE_TITLE + r")\s*(?:$|[.(:\-–]|\d)"
    r"|(?P<html><!doctype html|<html)"
    r"|\{\s*[\"'](?P<json>error|errors|error_message)[\"']\s*:"
    r")"
)
_PAGE_ERROR = re2.compile(r"(?i)<title>[^<]{0,40}(?:[45]\d\d|error)|<h1>[^<]{0,40}(?:[45]\d\d|error)")
_KEY_GROUPS = ("exc", "status", "code_status", "enum_status", "phrase")
"""The groups of ``_ERROR_HEAD`` that name the error: when the question names it too, it is the topic."""
_EXPLAINING = re2.compile(
    r"(?i)^[*_`'\")\s]*(?:[^\s.!?]+\s+){0,3}(?:means|indicates|signals|tells|"
    r"is (?:a|an|the|returned|raised|thrown|usually|what)|happens|occurs|usually|typically|refers|shows up|"
    r"comes from|error means|errors? (?:are|is))\b"
)
_TEMPLATE = re2.compile(
    r"\{\{\s*[^{}\n]{1,60}?\s*\}\}|\{%[^%\n]{0,80}%\}|\$\{[^{}\n]{1,60}\}|%\([a-z_]+\)s"
    r"|(?:^|[\s(>\"',;:])(?P<brace>\{[A-Za-z_][\w.]{0,40}\})"
    r"|<(?:[A-Z][A-Z0-9]*_[A-Z0-9_]+|PLACEHOLDER|INSERT[^<>\n]{0,40}|[a-z]+_[a-z_]+|your [^<>\n]{1,30})>"
    r"|\[(?P<bracket>[A-Za-z][A-Za-z /'_-]{0,40})\](?P<after>.?)"
    r"|(?i:\blorem ipsum\b|\bTODO: (?:fill|replace|insert|add))|\bXX+/XX+|\bX{4,}\b"
)
_PLACEHOLDER_WORDS = frozenset(
    "name date time amount price address email phone number company organisation organization product city "
    "country title position link url value location recipient customer client agent manager team department "
    "signature account order id reference details policy here x n insert enter your add placeholder sum total "
    "figure percentage code".split()
)
_NOT_PLACEHOLDERS = frozenset({"sic", "citation needed", "edit", "pdf", "optional", "emphasis added", "note"})
_CHAT_TOKEN = re2.compile(
    r"<\|[a-z_]{2,30}\|>|<｜[^｜\n]{1,30}｜>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>|</s>|\[TOOL_CALLS\]"
    r"|</?tool_call>|</?function_calls>|<invoke name="
)
_NULL_WORDS = frozenset({"null", "none", "undefined", "nil", "nan", "n/a", "[object object]", "{}", "[]"})
_ROLE_PREFIX = re2.compile(r"(?i)^\s*(?:user|human|question|q)\s*:\s*")
_LANGUAGE = re2.compile(
    r"(?i)translat|traduc|übersetz|tradu|翻译|翻訳|번역|перев|\b(?:english|chinese|mandarin|cantonese|japanese|"
    r"korean|russian|arabic|hebrew|hindi|greek|thai|spanish|french|german|portuguese|italian|kanji|hanzi|"
    r"hiragana|katakana|hangul|cyrillic|pinyin|language)\b|中文|日本語|한국어|русск|英语|英語|영어"
)


def no_answer(texts: Texts) -> str | None:
    stripped = texts.answer.strip().strip("\"'").strip()
    if not stripped:
        return "no answer: the output is empty"
    return f"no answer: the output is {stripped!r}" if stripped.lower() in _NULL_WORDS else None


def error_as_answer(texts: Texts) -> str | None:
    """The answer *is* error output: a stack trace, or an exception, HTTP error or error object as its opening."""
    prose = texts.prose.strip()
    trace = _STACK_TRACE.search(prose)
    if trace is not None and not texts.quoted(trace.group().strip()):
        return "the answer carries a stack trace"
    if _is_error_object(prose):
        return "the answer is an error object"
    match = _ERROR_HEAD.search(prose)
    if match is None:
        return None
    key = next((match.group(name) for name in _KEY_GROUPS if match.group(name)), None)
    if key is not None and texts.quoted(key):
        return None  # the error is what the user asked about
    following = prose[match.end() :].split(None, 3)
    if following and texts.quoted(following[0].strip(".,;:'\"`*")) and match.group("code") is not None:
        return None  # "Error: EADDRINUSE ..." when the user pasted that error
    if len(following) >= 3 and texts.quoted(" ".join(following[:3])):
        return None  # "ValueError: invalid literal for ..." when the user asked about that message
    if _EXPLAINING.search(prose[match.end() :]):
        return None  # "503 Service Unavailable means ..."
    if match.group("html") is not None and not _PAGE_ERROR.search(prose[:2000]):
        return None  # an HTML page, but not an error page
    return f"the answer is an error message ({match.group().strip()[:60]!r}...)"


def _is_error_object(prose: str) -> bool:
    """A JSON error body as the whole answer (Anthropic's ``{"type": "error", "error": {...}}``, ``{"error": ...}``)."""
    if prose[:1] != "{" or len(prose) > 20_000:
        return False
    try:
        value = json.loads(prose)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and (value.get("type") == "error" or bool(value.get("error")))


def template_left(texts: Texts) -> str | None:
    """A template placeholder of any common shape was left in the prose (code is not searched)."""
    if _LANGUAGE_OF_TEMPLATES.search(texts.question):
        return None  # the user asked for a template with fields to fill
    drafted = _DRAFT_FOR_USER.search(texts.question) is not None
    coding = _CODING.search(texts.question) is not None
    for seen, match in enumerate(_TEMPLATE.finditer(texts.prose)):
        if seen >= _MAX_CANDIDATES:
            break
        text = (match.group("brace") or match.group()).strip()
        if match.group("bracket") is not None and (drafted or not _is_bracket_placeholder(texts.prose, match)):
            continue  # a draft the user sends fills in "[Your Name]" themselves
        if coding and text[:1] in "{$%":
            continue  # "{name}" and "${x}" are the syntax a programming answer talks about
        if texts.quoted(text):
            continue
        return f"a template placeholder was left in the answer ({text[:60]!r})"
    return None


_MAX_CANDIDATES = 200
"""Placeholder-like spans examined per answer; links and citations past that are not looked at."""
_CODING = re2.compile(
    r"(?i)\b(?:python|javascript|typescript|bash|shell|jinja2?|f-?strings?|format(?:ting)?|variables?|interpolat\w*|"
    r"regex|yaml|templating|str\.format|printf)\b"
)
"""A programming question: brace and dollar syntax in its answer is the subject, even outside backquotes."""
_DRAFT_FOR_USER = re2.compile(
    r"(?i)\b(?:write|draft|compose|prepare)\b[^.?!\n]{0,40}\b(?:e-?mail|letter|message|note|reply|post|"
    r"cover letter|announcement|invitation|memo)\b"
)
"""A request for a text the user will send: its ``[Your Name]`` fields are the user's to fill, not leftovers."""
_LANGUAGE_OF_TEMPLATES = re2.compile(r"(?i)\btemplates?\b|placeholders?|fill(?:-| )in|\bblanks?\b|mail merge")


def _is_bracket_placeholder(prose: str, match: object) -> bool:
    """``[Customer Name]``, ``[amount]``, ``[X]``: not a link, a citation, a task-list box or an editorial note."""
    content: str = match.group("bracket")  # type: ignore[attr-defined]
    after: str = match.group("after")  # type: ignore[attr-defined]
    if after in ("(", "[", ":") or content.lower() in _NOT_PLACEHOLDERS:
        return False
    start: int = match.start()  # type: ignore[attr-defined]
    if content in ("x", "X", " ") and prose[max(0, start - 2) : start] in ("- ", "* "):
        return False
    if content.isupper() and len(content) > 1:
        return True
    tokens = content.lower().replace("_", " ").replace("/", " ").split()
    return bool(tokens) and len(tokens) <= 5 and any(token in _PLACEHOLDER_WORDS for token in tokens)


def chat_tokens(texts: Texts) -> str | None:
    """A chat template's control tokens (``<|im_end|>``, ``[INST]``, ``<end_of_turn>``) leaked into the answer."""
    match = _CHAT_TOKEN.search(texts.prose)
    if match is None or texts.quoted(match.group()):
        return None
    return f"the answer holds chat-template tokens ({match.group()!r})"


def echo_text(texts: Texts) -> str:
    """The answer as the echo check compares it: without a leading ``User:`` label."""
    stripped: str = _ROLE_PREFIX.sub("", texts.answer, count=1)
    return stripped


def script_mismatch(texts: Texts) -> str | None:
    """The answer is written in another script than the question (a Latin question answered in CJK)."""
    if _LANGUAGE.search(texts.question) or _LANGUAGE.search(texts.system):
        return None  # a translation, or a language the user or the system prompt asked for
    asked, answered = _scripts(texts.question), _scripts(texts.prose)
    mine, theirs = _dominant(asked), _dominant(answered)
    if mine is None or theirs is None or mine == theirs or words(texts.prose) < 6:
        return None
    if answered.get(mine, 0) * 5 >= sum(answered.values()):
        return None  # the question's script is still a good part of the answer
    if asked.get(theirs, 0) >= 12:
        return None  # the question holds text in the answer's script too (a pasted passage, a name)
    return f"the answer is in another script ({theirs}) than the question ({mine})"


_DENSE = frozenset({"CJK", "Hangul"})
"""Scripts whose one character carries about as much as three Latin letters: weighted so, when shares are compared."""


def _scripts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for char in text[:4000]:
        if char.isalpha():
            script = _script(ord(char))
            counts[script] = counts.get(script, 0) + (3 if script in _DENSE else 1)
    return counts


_SCRIPT_RANGES: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = (
    ("Latin", ((0, 0x250), (0x1E00, 0x1F00))),
    ("Cyrillic", ((0x400, 0x530),)),
    ("Greek", ((0x370, 0x400),)),
    ("Hebrew", ((0x590, 0x600),)),
    ("Arabic", ((0x600, 0x780),)),
    ("Devanagari", ((0x900, 0x980),)),
    ("Thai", ((0xE00, 0xE80),)),
    ("Hangul", ((0x1100, 0x1200), (0xAC00, 0xD7B0), (0x3130, 0x3190))),
    ("CJK", ((0x3040, 0x3100), (0x3400, 0xA000), (0xF900, 0xFB00))),
)
"""Code point ranges (start inclusive, end exclusive) of the scripts a mismatch is told by; the rest is "other"."""


def _script(code: int) -> str:
    for script, ranges in _SCRIPT_RANGES:
        if any(start <= code < end for start, end in ranges):
            return script
    return "other"


def _dominant(counts: dict[str, int]) -> str | None:
    total = sum(counts.values())
    if total < 6:
        return None
    script, count = max(counts.items(), key=lambda item: item[1])
    return script if count * 10 >= total * 7 and script != "other" else None
