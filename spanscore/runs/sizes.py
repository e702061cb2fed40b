"""What a held span, log record or turn costs in memory, estimated from its text.

Counts bound how many records the run assembler and the session tracker hold, not how large each one
is: 40 runs of 1.8 MB of text each added 305-347 MB to one session. The estimate is the characters of
every string the record holds (names, attribute keys and values, event and tool-call text), which is what grows
with a hostile payload, plus what Python's objects around them take: a span's record and each of its attributes,
events and links, measured against the process's resident memory (``SPAN_OBJECT_BYTES``, ``ENTRY_BYTES``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spanscore.records import LogRecord, SpanRecord
from spanscore.run import Turn

RECORD_OVERHEAD_BYTES = 256
"""Objects around the text of one session turn, a rough constant."""
SPAN_OBJECT_BYTES = 700
"""What a held span costs beyond its text with no attribute: the record, its dicts and the header of each of its
strings, and its place in the trace (measured: 745 bytes of RSS per span with 42 characters of text)."""
ENTRY_BYTES = 140
"""Each attribute beyond its text: the key's and the value's string headers and the dict's slot (measured: 150-172
bytes of RSS per attribute with 20-odd characters of text). Resource attributes are shared by the spans of an
export (one dict), so only their text counts."""
EVENT_BYTES = 250
"""Each event or link beyond its attributes and text: its record, its dict and its strings' headers."""


def _mapping(values: Mapping[str, str]) -> int:
    # Two C-level passes, not a generator over pairs: the estimate is taken for every span the assembler holds.
    return sum(map(len, values)) + sum(map(len, values.values()))


def _entries(values: Mapping[str, str]) -> int:
    return _mapping(values) + ENTRY_BYTES * len(values)


def span_bytes(span: SpanRecord) -> int:
    """Estimated bytes one span holds, its Python objects included.

    The text alone left a small span at a third of what holding it takes (415 bytes estimated against 1,283 of
    RSS, #43): the bounds on bytes then let run assembly hold three times what they said. Taken for every span
    the assembler holds, so written out: the mappings inline, and the events' and links' generators only for
    the spans that have some.
    """
    text = len(span.name) + len(span.status_message) + len(span.trace_state) + len(span.scope_name)
    attributes, resource = span.attributes, span.resource_attributes
    text += sum(map(len, attributes)) + sum(map(len, attributes.values())) + ENTRY_BYTES * len(attributes)
    text += sum(map(len, resource)) + sum(map(len, resource.values()))
    events, links = span.events, span.links
    if events or links:
        text += sum(EVENT_BYTES + len(event.name) + _entries(event.attributes) for event in events)
        text += sum(EVENT_BYTES + len(link.trace_state) + _entries(link.attributes) for link in links)
    return SPAN_OBJECT_BYTES + text


def log_bytes(log: LogRecord) -> int:
    """Estimated bytes one GenAI log record holds, its Python objects included (as ``span_bytes``)."""
    return (
        SPAN_OBJECT_BYTES
        + len(log.body)
        + len(log.event_name)
        + _entries(log.attributes)
        + _mapping(log.resource_attributes)
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
