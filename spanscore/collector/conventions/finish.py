"""Why a model call stopped: its finish reason, in one spelling whatever dialect reported it.

Every convention reports it somewhere else (``gen_ai.response.finish_reasons`` as an array,
Semantic Kernel's ``FinishReason.STOP``, OpenInference's ``llm.finish_reason``, the AI SDK's
``ai.response.finishReason``, inside each GenAI output message, inside a raw provider response) and
spells it differently (``MAX_TOKENS``, ``content-filter``, ``FinishReason.LENGTH``). Scorers compare
one canonical name: lower case, ``_`` between words, no enum prefix. Each dialect reader calls
these helpers on the attributes it owns and puts the result in ``SpanFacts.finish_reason``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import re2

from spanscore.collector.conventions.parsing import load_json

_MAX_LENGTH = 64
"""Longer values are not a finish reason (a sender's free text); they are ignored."""
_MESSAGE_KEYS = ("finish_reason", "finishReason", "stop_reason", "stopReason")
_IN_TEXT = re2.compile(r"(?:finish_reason|finishReason|stop_reason)['\"]?\s*[:=]\s*['\"]([A-Za-z_.-]{1,64})['\"]")
"""A reason inside a response printed as a Python or JavaScript object (``Choice(finish_reason='stop', ...)``)."""
_MAX_TEXT = 100_000


def canonical(value: Any) -> str | None:
    """One finish reason in its canonical spelling, from a string, a JSON array text or a list (its first choice).

    A response with several choices reports one reason each; the answer is the first choice's.
    """
    if isinstance(value, str) and value[:1] == "[":
        value = load_json(value)
    if isinstance(value, list | tuple):
        value = next((item for item in value if isinstance(item, str) and item.strip()), None)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or len(text) > _MAX_LENGTH:
        return None
    text = text.rpartition(".")[2] if text.lower().startswith("finishreason.") else text
    return text.lower().replace("-", "_").replace(" ", "_")


def from_attributes(attributes: Mapping[str, str], keys: Iterable[str]) -> tuple[str, str] | None:
    """The first of ``keys`` that holds a finish reason: (the reason, the key)."""
    for key in keys:
        reason = canonical(attributes.get(key))
        if reason is not None:
            return reason, key
    return None


def from_indexed(attributes: Mapping[str, str], prefix: str, suffix: str) -> tuple[str, str] | None:
    """The reason of the highest-numbered flattened message (``PREFIX N SUFFIX``) that has one: (reason, key).

    Flattened conventions spell each output message as numbered keys (OpenInference's
    ``llm.output_messages.0.message.finish_reason``, OpenLLMetry's ``gen_ai.completion.0.finish_reason``).
    """
    numbered = []
    for key in attributes:
        if key.startswith(prefix) and key.endswith(suffix):
            index = key[len(prefix) : len(key) - len(suffix)]
            if index.isdigit():
                numbered.append((int(index), key))
    return from_attributes(attributes, [key for _, key in sorted(numbered, reverse=True)])


def from_messages(messages: Any) -> str | None:
    """The finish reason the last output message carries (GenAI ``gen_ai.output.messages``), if any."""
    if isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, Mapping):
            for key in _MESSAGE_KEYS:
                reason = canonical(message.get(key))
                if reason is not None:
                    return reason
    return None


def from_response(value: Any) -> str | None:
    """The finish reason inside a raw provider response as an instrumentation recorded it (``output.value``).

    OpenAI's ``choices[0].finish_reason``, Anthropic's ``stop_reason``, Gemini's
    ``candidates[0].finishReason``, or a framework's own ``finish_reason`` at the top; in a response
    printed as an object rather than JSON (Haystack, smolagents), the first ``finish_reason=...``.
    """
    if not isinstance(value, str):
        return _structured(value)
    reason = _structured(load_json(value)) if value[:1] == "{" else None
    if reason is None:
        found = _IN_TEXT.search(value[:_MAX_TEXT])
        reason = canonical(found.group(1)) if found else None
    return reason


def _structured(value: Any) -> str | None:
    if not isinstance(value, Mapping):
        return None
    for key in _MESSAGE_KEYS:
        reason = canonical(value.get(key))
        if reason is not None:
            return reason
    for key in ("choices", "candidates"):
        choices = value.get(key)
        if isinstance(choices, list) and choices:
            return from_messages(choices[:1])
    return None
