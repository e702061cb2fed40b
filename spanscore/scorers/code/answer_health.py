"""``answer_health``: did the run end in an answer at all, or in one of the ways agents visibly break?

Mastra's lexical scorers measure overlap between question and answer, which says little about a
correct answer: "What is 2+2?" -> "4" covers none of the question's words, while an empty answer or
the question echoed back scores well. What code *can* tell without a judge is whether the run broke
in a way anyone would call broken. Each check below looks for one such defect; the score is 1 when
none is found and 0 otherwise, and the reason names every defect found (or says that none was).

- **run error**: the agent span ended with an error status.
- **no answer**: the answer is empty, whitespace, or a null word (``null``, ``None``, ``undefined``).
- **cut off**: the model stopped at its length limit (``finish_reasons`` says ``length``/``max_tokens``).
- **error as the answer**: the answer *is* an error: it opens with an exception or HTTP error, or
  carries a stack trace (a Python traceback header, JavaScript ``at f (file:1:2)`` frames).
- **template left in**: ``{{ variable }}``, ``${variable}``, ``[INSERT ...]``, ``<PLACEHOLDER>``.
- **echo**: the answer is the question again, give or take case and punctuation.
- **refusal**: the answer opens by declining ("I'm sorry, but I can't ...", "As an AI language model").
- **failed tool call**: a tool's result is an error.

Text inside code (fenced blocks and inline backquotes) is not searched for errors or templates: an
answer *about* a ``ValueError``, or code with ``${name}`` in it, is a healthy answer. The checks are
English-worded where words matter (refusals, errors); an answer in another language passes them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from rapidfuzz import fuzz

from spanscore.run import Run
from spanscore.scorers.base import Scorer, StepContext, create_scorer
from spanscore.scorers.code.text import capped, input_text, output_text
from spanscore.scorers.registry import register

VERSION = "1"
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_NULL_WORDS = frozenset({"null", "none", "undefined", "nil", "nan", "n/a"})
_ERROR_OPENING = re.compile(
    r"^\W{0,3}(?:(?:[A-Z]\w*)?(?:Error|Exception)\b(?::|\s*\()"
    r"|(?:an? )?(?:unexpected |internal )?error (?:occurred|has occurred|while)"
    r"|HTTP (?:error )?[45]\d\d\b|[45]\d\d (?:Internal Server Error|Bad Gateway|Service Unavailable|Not Found)"
    r"|internal server error|rate limit (?:reached|exceeded)|request timed out)",
    re.IGNORECASE,
)
_STACK_TRACE = re.compile(
    r"Traceback \(most recent call last\):|^\s+at [\w.$<>\[\] ]+ \(?[^()\s]+:\d+:\d+\)?$|^\s+File \"[^\"]+\", line \d+",
    re.MULTILINE,
)
_TEMPLATE = re.compile(
    r"\{\{\s*[\w.\-]+\s*\}\}|\$\{[\w.]+\}|\[(?:INSERT|YOUR|ENTER|PLACEHOLDER)[^\]]{0,40}\]|<(?:PLACEHOLDER|INSERT[^>]{0,40})>"
    r"|\bTODO: (?:fill|replace|insert)",
    re.IGNORECASE,
)
_REFUSAL = re.compile(
    r"^\W{0,3}(?:(?:I'm|I am|we're|we are) (?:so |very |really )?sorry|sorry|unfortunately|I apologi[sz]e)?[,.!]?\s*"
    r"(?:but\s+)?(?:I|we) (?:can(?:'|no)t|cannot|am unable to|are unable to|won't|will not|am not able to|"
    r"do not have (?:access|the ability)|don't have (?:access|the ability))\b"
    r"|^\W{0,3}as an ai(?: language model| assistant)?\b",
    re.IGNORECASE,
)
_WORDS = re.compile(r"[^\w]+")
_CUT_REASONS = frozenset({"length", "max_tokens", "max_output_tokens", "model_length"})


def _prose(text: str) -> str:
    """``text`` without code: errors and templates quoted in code are the answer's subject, not a defect."""
    return _CODE.sub(" ", text)


def run_error(run: Run, answer: str) -> str | None:
    return f"the agent span ended in an error ({run.error})" if run.error else None


def no_answer(run: Run, answer: str) -> str | None:
    stripped = answer.strip().strip("\"'").strip()
    if not stripped:
        return "no answer: the output is empty"
    return f"no answer: the output is {stripped!r}" if stripped.lower() in _NULL_WORDS else None


def cut_off(run: Run, answer: str) -> str | None:
    reasons = {str(reason).lower() for reason in _finish_reasons(run)}
    found = reasons & _CUT_REASONS
    return f"the answer was cut at the length limit (finish reason {sorted(found)[0]})" if found else None


def error_as_answer(run: Run, answer: str) -> str | None:
    prose = _prose(answer).strip()
    if _STACK_TRACE.search(prose):
        return "the answer carries a stack trace"
    match = _ERROR_OPENING.match(prose)
    return f"the answer is an error message ({match.group().strip()!r}...)" if match else None


def template_left(run: Run, answer: str) -> str | None:
    match = _TEMPLATE.search(_prose(answer))
    return f"a template placeholder was left in the answer ({match.group()!r})" if match else None


def echo(run: Run, answer: str) -> str | None:
    question, said = _normal(_last_question(run)), _normal(answer)
    if not question or not said or len(said) > 1.2 * len(question) + 10:
        return None
    return "the answer repeats the question" if fuzz.ratio(question, said) >= 90 else None


def refusal(run: Run, answer: str) -> str | None:
    match = _REFUSAL.match(answer.strip())
    return f"the answer declines ({match.group().strip()!r}...)" if match else None


def failed_tool_calls(run: Run, answer: str) -> str | None:
    failed = [call.name for call in run.all_tool_calls if _is_error_result(call.result)]
    return f"tool call(s) failed: {', '.join(failed)}" if failed else None


CHECKS: tuple[Callable[[Run, str], str | None], ...] = (
    run_error, no_answer, cut_off, error_as_answer, template_left, echo, refusal, failed_tool_calls,
)  # fmt: skip
"""Every defect check, in the order the reason lists what they found."""


def defects(run: Run) -> list[str]:
    """What is wrong with ``run``'s answer, one sentence per defect found; empty for a healthy run."""
    answer = output_text(run) if run.output else ""
    found = [check(run, answer) for check in CHECKS]
    defects = [problem for problem in found if problem]
    if any(problem.startswith("no answer") for problem in defects):
        # An empty answer is neither an echo nor a refusal; say the one thing that is wrong.
        defects = [p for p in defects if not p.startswith(("the answer repeats", "the answer declines"))]
    return defects


def _finish_reasons(run: Run) -> list[Any]:
    raw = run.attributes.get("gen_ai.response.finish_reasons") or run.attributes.get("llm.finish_reason")
    if raw is None:
        return []
    if isinstance(raw, list | tuple):
        return list(raw)
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        return [raw]
    return parsed if isinstance(parsed, list) else [parsed]


def _last_question(run: Run) -> str:
    users = [message.content for message in run.input or () if message.role == "user"]
    return capped(users[-1], "input") if users else input_text(run)


def _normal(text: str) -> str:
    return _WORDS.sub(" ", text.lower()).strip()


def _is_error_result(result: str | None) -> bool:
    if not result:
        return False
    text = result.strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error") or parsed.get("isError") or parsed.get("is_error")
        return bool(error) and parsed.get("error") not in ({}, [], "")
    return bool(_ERROR_OPENING.match(text) or _STACK_TRACE.search(text))


@register("answer_health")
def answer_health() -> Scorer:
    """Build the scorer (it takes no options)."""

    def preprocess(context: StepContext) -> dict[str, Any]:
        return {"defects": defects(context.run)}

    def generate_score(context: StepContext) -> float:
        return 0.0 if context.preprocess_result["defects"] else 1.0

    def generate_reason(context: StepContext) -> str:
        found = context.preprocess_result["defects"]
        if not found:
            return f"no defect found by {len(CHECKS)} checks ({', '.join(check.__name__ for check in CHECKS)})"
        return "; ".join(found)

    return (
        create_scorer(
            "answer_health",
            version=VERSION,
            description="1 when the run ended in an answer with none of the visible defects (empty, error, "
            "stack trace, template left in, echo, refusal, cut off, failed tool call), else 0.",
            requires=(),
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
        .generate_reason(generate_reason)
    )
