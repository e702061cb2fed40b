"""pydantic-ai's own agent-run attributes.

pydantic-ai's built-in instrumentation puts the whole conversation of a run on
its agent span (``invoke_agent NAME``) as ``pydantic_ai.all_messages`` (GenAI
``parts`` messages, history included) and the run's result as
``final_result`` (text, or JSON for structured output). These speak for the
run directly, so they beat the first and last chat spans: the input is the
prompt this run answered (the last user message with text; earlier turns are
history), the output is the final result even when it is structured and no
chat span ever carried it as text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spanscore.collector.conventions import finish
from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.conventions.parsing import as_text, json_or_text, load_json
from spanscore.records import SpanRecord
from spanscore.run import Message

DIALECT = "pydantic_ai"
MESSAGES = "pydantic_ai.all_messages"
RESULT = "final_result"
ATTRIBUTE_PREFIXES = (MESSAGES, RESULT)
"""Every span attribute ``extract`` reads starts with one of these; a span with none yields no facts."""


def extract(span: SpanRecord) -> SpanFacts:
    facts = SpanFacts()
    attributes = span.attributes
    messages = load_json(attributes.get(MESSAGES))
    if isinstance(messages, list):
        prompt = _last_prompt(messages)
        if prompt is not None:
            facts.put("input", (Message("user", prompt),), f"{DIALECT}:{MESSAGES}")
        system = "\n".join(_texts(item) for item in messages if _role(item) == "system")
        facts.put("system", system or None, f"{DIALECT}:{MESSAGES}")
        facts.put("finish_reason", finish.from_messages(messages[-1:]), f"{DIALECT}:{MESSAGES} finish_reason")
    result = attributes.get(RESULT)
    if result is not None:
        value = json_or_text(result)
        text = value if isinstance(value, str) else as_text(value)
        facts.put("output", (Message("assistant", text or ""),), f"{DIALECT}:{RESULT}")
    return facts


def _role(item: Any) -> str | None:
    return item.get("role") if isinstance(item, Mapping) else None


def _texts(item: Any) -> str:
    parts = item.get("parts") if isinstance(item, Mapping) else None
    if not isinstance(parts, list):
        return ""
    texts = [p["content"] for p in parts if isinstance(p, Mapping) and p.get("type") == "text" and "content" in p]
    return "\n".join(text for text in texts if isinstance(text, str))


def _last_prompt(messages: list[Any]) -> str | None:
    """The text of the last user message that has text (tool results come back as user messages too)."""
    for item in reversed(messages):
        if _role(item) == "user":
            text = _texts(item)
            if text.strip():
                return text
    return None
