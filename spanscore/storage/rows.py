"""Decoded records in the forms storage takes: JSON for spans (and the spool), column lists for logs.

Columnar batches avoid building one dict per row on the hot path: each column
is filled in one pass over the records.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

import orjson

from spanscore.records import LogRecord, SpanEvent, SpanLink, SpanRecord

LOG_COLUMNS = (
    "Timestamp",
    "TraceId",
    "SpanId",
    "SeverityText",
    "SeverityNumber",
    "ServiceName",
    "Body",
    "ResourceAttributes",
    "ScopeName",
    "ScopeVersion",
    "LogAttributes",
    "EventName",
)


def log_columns(logs: Sequence[LogRecord]) -> list[list[Any]]:
    """One list per entry of ``LOG_COLUMNS``, in that order."""
    return [
        [r.time_ns for r in logs],
        [r.trace_id for r in logs],
        [r.span_id for r in logs],
        [r.severity_text for r in logs],
        [min(max(r.severity_number, 0), 255) for r in logs],
        [r.service_name for r in logs],
        [r.body for r in logs],
        [r.resource_attributes for r in logs],
        [r.scope_name for r in logs],
        [r.scope_version for r in logs],
        [r.attributes for r in logs],
        [r.event_name for r in logs],
    ]


_PICKLE_MARK = b"\x80"  # protocol 2+ pickles start with PROTO; JSON starts with "["


def _unpickle(data: bytes) -> list[Any]:
    records: list[Any] = pickle.loads(data)  # our own spool files, never client input
    return records


ENCODE_CHUNK = 1_000
"""Records per orjson call. One call holds the GIL throughout: a 70,000-span batch in one call held it for
about 90 ms, and every small request on the event loop waited that long."""


def records_to_json(records: Sequence[SpanRecord] | Sequence[LogRecord]) -> bytes:
    """A batch as one JSON array: the insert body for ``otel_traces_intake`` and the spool's form."""
    return join_json_arrays(records_to_json_parts(records))


def records_to_json_parts(records: Sequence[SpanRecord] | Sequence[LogRecord]) -> list[bytes]:
    """A batch as JSON arrays of at most ``ENCODE_CHUNK`` records each, in order (one ``[]`` when empty)."""
    items = records if isinstance(records, list) else list(records)
    if len(items) <= ENCODE_CHUNK:
        return [orjson.dumps(items)]
    return [orjson.dumps(items[at : at + ENCODE_CHUNK]) for at in range(0, len(items), ENCODE_CHUNK)]


def join_json_arrays(parts: Sequence[bytes]) -> bytes:
    """Several ``records_to_json`` outputs as one array: no record is encoded again, and its bytes copied once.

    Each array's brackets are cut off through a memoryview and one ``join`` writes the result. Slicing the
    bytes, joining them and adding the brackets copied every byte three times with the GIL held: about 90 ms
    for the 48 MB of eight 1,000-span requests of LLM-sized spans, 23 ms now (#43). The spool log does not join
    at all: it writes ``json_array_pieces`` in one ``pwritev``.
    """
    if len(parts) == 1:
        return parts[0]
    return b"".join(json_array_pieces(parts))


def json_array_pieces(parts: Sequence[bytes]) -> list[bytes | memoryview]:
    """The pieces that written one after another make ``parts`` one JSON array: their insides between commas."""
    pieces: list[bytes | memoryview] = [b"["]
    for part in parts:
        if len(part) > 2:
            if len(pieces) > 1:
                pieces.append(b",")
            pieces.append(memoryview(part)[1:-1])
    pieces.append(b"]")
    return pieces


def is_json_array(data: bytes) -> bool:
    """Whether spooled bytes are ``records_to_json`` output (``join_json_arrays`` takes them), not an old pickle."""
    return data[:1] != _PICKLE_MARK


def spans_from_json(data: bytes) -> list[SpanRecord]:
    """The inverse of ``records_to_json`` (spool replay after a restart).

    Spools written before spans were spooled as JSON hold pickles; those still replay.
    """
    if data[:1] == _PICKLE_MARK:
        return _unpickle(data)
    spans = []
    for item in orjson.loads(data):
        item["events"] = tuple(SpanEvent(**event) for event in item["events"])
        item["links"] = tuple(SpanLink(**link) for link in item["links"])
        spans.append(SpanRecord(**item))
    return spans


def logs_from_json(data: bytes) -> list[LogRecord]:
    if data[:1] == _PICKLE_MARK:
        return _unpickle(data)
    return [LogRecord(**item) for item in orjson.loads(data)]
