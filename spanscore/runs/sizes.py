"""What a held span, log record or turn costs in memory, estimated from its text.

Counts bound how many records the run assembler and the session tracker hold, not how large each one
is: 40 runs of 1.8 MB of text each added 305-347 MB to one session. The estimate is the characters of
every string the record holds (names, attribute keys and values, event and tool-call text) plus a fixed
cost per record for the objects around them, which is what grows with a hostile payload.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spanscore.records import LogRecord, SpanRecord
from spanscore.run import Turn

RECORD_OVERHEAD_BYTES = 256
"""Objects around the text of one record (the dataclass, its dicts and tuples), a rough constant."""


def _mapping(values: Mapping[str, str]) -> int:
    # Two C-level passes, not a generator over pairs: the estimate is taken for every span the assembler holds.
    return sum(map(len, values)) + sum(map(len, values.values()))


def span_bytes(span: SpanRecord) -> int:
    """Estimated bytes one span holds.

    Taken for every span the assembler holds, so written out: the mappings inline, and the events' and links'
    generators only for the spans that have some (0.9 µs per small span instead of 1.5).
    """
    text = len(span.name) + len(span.status_message) + len(span.trace_state) + len(span.scope_name)
    attributes, resource = span.attributes, span.resource_attributes
    text += sum(map(len, attributes)) + sum(map(len, attributes.values()))
    text += sum(map(len, resource)) + sum(map(len, resource.values()))
    events, links = span.events, span.links
    if events or links:
        text += sum(len(event.name) + _mapping(event.attributes) for event in events)
        text += sum(len(link.trace_state) + _mapping(link.attributes) for link in links)
    return RECORD_OVERHEAD_BYTES + text + 64 * (1 + len(events) + len(links))


def log_bytes(log: LogRecord) -> int:
    """Estimated bytes one GenAI log record holds."""
    text = len(log.body) + len(log.event_name) + _mapping(log.attributes) + _mapping(log.resource_attributes)
    return RECORD_OVERHEAD_BYTES + text


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
