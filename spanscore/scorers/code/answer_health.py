"""``answer_health``: did the run end in an answer at all, or in one of the ways agents visibly break?

Mastra's lexical scorers measure overlap between question and answer, which says little about a
correct answer: "What is 2+2?" -> "4" covers none of the question's words, while an empty answer or
the question echoed back scores well. What code *can* tell without a judge is whether the run broke
in a way anyone would call broken. Each check below looks for one such defect; the score is 1 when
none is found and 0 otherwise, and the reason names every defect found (or says that none was).

From the telemetry, read the same way whatever convention the spans spoke (``Run.finish_reasons``
and ``ToolCall.error`` are filled by every convention reader):

- **run error**: the agent span ended with an error status.
- **cut off**: the run's *last* model call stopped at its length limit (``length``, ``max_tokens``)
  or was stopped by a content filter (``content_filter``, ``safety``...). An earlier call that was
  cut and retried does not count.
- **failed tool call**: a tool span ended with an error status, or its result is an error, unless a
  later call of the same tool succeeded. A tool that answered "not found" worked.

From the text (``health_text``, ``health_marks``): no answer, error output as the answer, a stock
failure message, a template placeholder, chat-template tokens, a tool call or scratchpad instead of
an answer, a refusal or a promise with nothing after it, a loop, an echo of the question, an answer
in another script than the question. Text checks read at most ``MAX_ANSWER_CHARS`` of the answer
(the reason says when it was cut) and run in time linear in what they read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import re2
from rapidfuzz import fuzz

from spanscore.collector.conventions.finish import canonical
from spanscore.run import Run, ToolCall
from spanscore.scorers.base import Scorer, StepContext, create_scorer
from spanscore.scorers.code import health_marks as marks
from spanscore.scorers.code import health_text as text
from spanscore.scorers.code.text import capped, input_text, output_text
from spanscore.scorers.registry import register

VERSION = "2"
MAX_ANSWER_CHARS = 20_000
"""The text checks read this much of the answer; an answer is rarely longer, and a loop or a cut shows early."""
MAX_QUESTION_CHARS = 4_000
MAX_TOOL_RESULT_CHARS = 2_000
_CUT = frozenset({"length", "max_tokens", "max_output_tokens", "model_length", "model_context_window_exceeded"})
_FILTERED = frozenset(
    {"content_filter", "content_filtered", "safety", "recitation", "prohibited_content", "blocklist", "spii",
     "image_safety", "guardrail_intervened", "refusal"}
)  # fmt: skip
_NOT_FOUND = re2.compile(
    r"(?i)not found|no such|does not exist|doesn't exist|no (?:results?|records?|matches|matching|data)\b"
    r"|\bno \w+ (?:with|for|found|matching)\b|\bunknown \w+|\bfound\W{0,3}:\s*false|\[\]|0 results"
)
_WORDS = re2.compile(r"[^\w]+")

Check = Callable[[Run, text.Texts], str | None]


def run_error(run: Run, texts: text.Texts) -> str | None:
    return f"the agent span ended in an error ({run.error})" if run.error else None


def cut_off(run: Run, texts: text.Texts) -> str | None:
    reason = run.finish_reason or _root_finish_reason(run)
    if reason in _CUT:
        return f"the answer was cut at the length limit (the last model call's finish reason is {reason})"
    if reason in _FILTERED:
        return f"the answer was stopped by a content filter (the last model call's finish reason is {reason})"
    return None


def echo(run: Run, texts: text.Texts) -> str | None:
    question, said = _normal(texts.question), _normal(marks.echo_text(texts))
    if not question or not said or len(said) > 1.2 * len(question) + 10 or len(question) < 12:
        return None
    return "the answer repeats the question" if fuzz.ratio(question, said) >= 90 else None


def failed_tool_calls(run: Run, texts: text.Texts) -> str | None:
    """Tool calls that failed and were not retried with success; each named once."""
    calls = run.all_tool_calls
    failed: list[str] = []
    for index, call in enumerate(calls):
        problem = _tool_failure(call)
        if problem is None or call.name in failed:
            continue
        if any(later.name == call.name and _tool_failure(later) is None for later in calls[index + 1 :]):
            continue  # retried, and the retry worked
        failed.append(call.name)
    return f"tool call(s) failed: {', '.join(failed)}" if failed else None


def _text_check(check: Callable[[text.Texts], str | None]) -> Check:
    def run_check(run: Run, texts: text.Texts) -> str | None:
        return check(texts)

    run_check.__name__ = check.__name__
    return run_check


CHECKS: tuple[Check, ...] = (
    run_error,
    _text_check(marks.no_answer),
    cut_off,
    _text_check(marks.error_as_answer),
    _text_check(text.fallback),
    _text_check(marks.template_left),
    _text_check(marks.chat_tokens),
    _text_check(text.tool_call_answer),
    echo,
    _text_check(text.refusal),
    _text_check(text.filler_only),
    _text_check(text.repetition),
    _text_check(marks.script_mismatch),
    failed_tool_calls,
)
"""Every defect check, in the order the reason lists what they found."""


def texts_of(run: Run) -> tuple[text.Texts, int]:
    """The texts the checks read (the answer capped at ``MAX_ANSWER_CHARS``) and the answer's full length."""
    answer = output_text(run) if run.output else ""
    question = _last_question(run)[-MAX_QUESTION_CHARS:]
    system = (run.system or "")[:MAX_QUESTION_CHARS]
    return text.Texts.of(answer[:MAX_ANSWER_CHARS], question, system), len(answer)


def defects(run: Run) -> list[str]:
    """What is wrong with ``run``'s answer, one sentence per defect found; empty for a healthy run."""
    texts, _ = texts_of(run)
    found = [problem for check in CHECKS if (problem := check(run, texts))]
    if any(problem.startswith("no answer") for problem in found):
        # An empty answer is only empty: say the one thing that is wrong with it.
        found = [p for p in found if p.startswith(("no answer", "the agent span", "the answer was", "tool call"))]
    return found


def health_findings(run: Run) -> str:
    """``answer_health``'s findings as one text, for a judge that reads them as context (``{health}``)."""
    found = defects(run)
    return "; ".join(found) if found else f"no defect found by the {len(CHECKS)} local checks"


def _root_finish_reason(run: Run) -> str | None:
    """A finish reason set on the run itself (a hand-built run's attributes), for runs with no model calls."""
    raw = run.attributes.get("gen_ai.response.finish_reasons") or run.attributes.get("llm.finish_reason")
    return canonical(raw) if raw is not None else None


def _tool_failure(call: ToolCall) -> str | None:
    if call.error is not None:
        return call.error
    return "error result" if _is_error_result((call.result or "")[:MAX_TOOL_RESULT_CHARS]) else None


def _is_error_result(result: str) -> bool:
    """An error the tool returned as its result; "not found" / "no such record" is an answer, not an error."""
    stripped = result.strip()
    if not stripped or _NOT_FOUND.search(stripped):
        return False
    try:
        parsed: Any = json.loads(stripped) if stripped[:1] == "{" else None
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error") or parsed.get("isError") or parsed.get("is_error")
        return bool(error) and parsed.get("error") not in ({}, [], "")
    return marks.error_as_answer(text.Texts.of(stripped, "", "")) is not None


def _last_question(run: Run) -> str:
    users = [message.content for message in run.input or () if message.role == "user"]
    return capped(users[-1], "input") if users else input_text(run)


def _normal(value: str) -> str:
    spaced: str = _WORDS.sub(" ", value.lower())
    return spaced.strip()


@register("answer_health")
def answer_health() -> Scorer:
    """Build the scorer (it takes no options)."""

    def preprocess(context: StepContext) -> dict[str, Any]:
        _, length = texts_of(context.run)
        return {"defects": defects(context.run), "answer_chars": length, "checked_chars": min(length, MAX_ANSWER_CHARS)}

    def generate_score(context: StepContext) -> float:
        return 0.0 if context.preprocess_result["defects"] else 1.0

    def generate_reason(context: StepContext) -> str:
        result = context.preprocess_result
        cut = result["answer_chars"] - result["checked_chars"]
        note = f" (text checks read the first {result['checked_chars']} of {result['answer_chars']} characters)"
        note = note if cut > 0 else ""
        if not result["defects"]:
            return f"no defect found by {len(CHECKS)} checks ({', '.join(c.__name__ for c in CHECKS)}){note}"
        return "; ".join(result["defects"]) + note

    return (
        create_scorer(
            "answer_health",
            version=VERSION,
            description="1 when the run ended in an answer with none of the visible defects (empty, cut off, "
            "error or failure message, placeholder or template tokens, tool call or scratchpad, refusal or "
            "promise with no answer, loop, echo, other script, failed tool call), else 0.",
            requires=(),
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
