"""What a held span, log record or turn costs in memory, estimated from its text.

Counts bound how many records the run assembler and the session tracker hold, not how large each one
is: 40 runs of 1.8 MB of text each added 305-347 MB to one session. The estimate is the characters of
every string the record holds (names, attribute keys and values, event and tool-call text), which is what grows
with a hostile payload, plus what Python's objects around them take: a span's record and each of its attributes,
events and links, measured against the process's resident memory (``SPAN_OBJECT_BYTES``, ``SLOT_BYTES``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from sys import getsizeof
from typing import Any

from spanscore.records import LogRecord, SpanRecord
from spanscore.run import Turn

RECORD_OVERHEAD_BYTES = 256
"""Objects around the text of one session turn, a rough constant."""
SPAN_OBJECT_BYTES = 720
"""What a held span costs besides its name and attributes: the record, its ids' strings, its dicts and its place in
the trace (fitted: 745-5,384 bytes of RSS a span against 811-5,378 estimated, for 0-30 attributes)."""
SLOT_BYTES = 30
"""Each attribute's place in its dict, besides the key's and the value's strings."""
STR_BYTES = 49
"""The header of a string of ASCII text, which takes a byte a character (``sys.getsizeof``)."""
ASCII_ENTRY_BYTES = 2 * STR_BYTES + SLOT_BYTES
EVENT_BYTES = 250
"""Each event or link besides its name and attributes: its record and its dict."""


def _strings(values: Mapping[str, str]) -> int:
    """A mapping's strings as Python stores them, and their places in it.

    Values of ASCII text (nearly all) are counted by their length plus a header: ``sys.getsizeof`` on each costs
    about twice as much. Other values are sized as stored: CJK text takes 2 bytes a character, text with an emoji 4
    (#43). Keys are counted as ASCII: they are names, bounded by ``collector.limits.max_name_chars``.
    """
    texts = values.values()
    keys = sum(map(len, values))
    if all(map(str.isascii, texts)):
        return keys + sum(map(len, texts)) + ASCII_ENTRY_BYTES * len(values)
    return keys + sum(map(getsizeof, texts)) + (STR_BYTES + SLOT_BYTES) * len(values)


def _text(values: Mapping[str, str]) -> int:
    return sum(map(len, values)) + sum(map(len, values.values()))


def span_bytes(span: SpanRecord) -> int:
    """Estimated bytes one span holds, its Python objects included.

    The text alone left a small span at a third of what holding it takes (415 bytes estimated against 1,283 of
    RSS, #43): the bounds on bytes then let run assembly hold three times what they said. Strings a span has of
    its own are counted as Python stores them (``_strings``); the resource's attributes and the scope, shared by
    the spans of an export, by their text only. Taken for every span the assembler holds, so written out: the
    events' and links' generators only for the spans that have some.
    """
    size = SPAN_OBJECT_BYTES + STR_BYTES + len(span.name) + len(span.status_message) + len(span.trace_state)
    size += _strings(span.attributes) + len(span.scope_name) + _text(span.resource_attributes)
    events, links = span.events, span.links
    if events or links:
        size += sum(EVENT_BYTES + getsizeof(event.name) + _strings(event.attributes) for event in events)
        size += sum(EVENT_BYTES + len(link.trace_state) + _strings(link.attributes) for link in links)
    return size


def log_bytes(log: LogRecord) -> int:
    """Estimated bytes one GenAI log record holds, its Python objects included (as ``span_bytes``)."""
    return (
        SPAN_OBJECT_BYTES
        + getsizeof(log.body)
        + getsizeof(log.event_name)
        + _strings(log.attributes)
        + _text(log.resource_attributes)
    )


def turn_bytes(turn: Turn) -> int:
    """Estimated bytes one session turn holds (its texts and tool calls)."""
    text = len(turn.user or "") + len(turn.answer or "") + len(turn.error or "")
    for call in turn.tool_calls:
        text += len(call.name) + len(call.result or "") + _arguments(call.arguments) + RECORD_OVERHEAD_BYTES // 4
    return RECORD_OVERHEAD_BYTES + text


def _arguments(arguments: Mapping[str, Any] | str | None) -> int:
    if arguments is None:
        return 0
    if isinstance(arguments, str):
        return len(arguments)
    return len(json.dumps(arguments, default=str))
