"""A large protobuf export split into sub-requests of about ``CHUNK_BYTES``, decoded one after another.

The protobuf parser builds every message of what it parses at once, about 55 bytes each whatever its size on
the wire (2 bytes for an empty event), and the caps on events and attributes apply only to what it built: a
2 MB body of empty events cost 55 MB, a 64 MiB one would have cost 1.9 GB. Parsed a piece at a time, with each
piece's rows built before the next is parsed, the parser holds one piece at most.

Traces and logs share their framing (request field 1: resource groups; group field 1: resource, 2: scope
groups; scope group field 1: scope, 2: spans or log records), so one splitter serves both. Only those levels
are read in Python, one tag and length per span; a sub-request repeats its resource and scope. A single span
or log record larger than a piece, or a resource or scope header larger than ``HEADER_BYTES``, is parsed alone
only when its own message count is within ``decode_budget``'s allowance; otherwise it is refused by itself
(partial success, with the rest stored), or with its whole group for a header.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from google.protobuf.descriptor import Descriptor

from spanscore.collector.decode_budget import density_problem, read_varint

CHUNK_BYTES = 1 << 20
"""A body up to this size is parsed whole; larger ones in sub-requests of about this size."""
HEADER_BYTES = 64 << 10
"""Resource and scope headers larger than this have their message count checked before they are repeated."""


@dataclass(slots=True)
class Split:
    """The sub-requests of one body, and the items refused while splitting (with the first reason)."""

    pieces: list[bytes] = field(default_factory=list)
    rejected: int = 0
    error_message: str = ""

    def reject(self, count: int, message: str) -> None:
        self.rejected += count
        self.error_message = self.error_message or message


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(body: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, field start, payload start, field end) of each field in ``body[start:end]``."""
    pos = start
    while pos < end:
        begin = pos
        key, pos = read_varint(body, pos)
        wire = key & 7
        if wire == 2:
            length, pos = read_varint(body, pos)
            payload, pos = pos, pos + length
        elif wire == 0:
            payload = pos
            _, pos = read_varint(body, pos)
        elif wire == 1:
            payload, pos = pos, pos + 8
        elif wire == 5:
            payload, pos = pos, pos + 4
        else:
            raise ValueError(f"wire type {wire} is not used by OTLP")
        if pos > end:
            raise ValueError("a field runs past the end of its message")
        yield key >> 3, begin, payload, pos


def split_export(body: bytes, request: Descriptor) -> Split | None:
    """``body`` cut into sub-requests, or None when it is small enough to parse whole (or not valid framing).

    ``request`` is the export request's descriptor (traces or logs); the item type is read from it.
    """
    if len(body) <= CHUNK_BYTES:
        return None
    try:
        return _Splitter(body, request).run()
    except (ValueError, IndexError):
        return None  # malformed: the parser refuses the whole body with its own reason


class _Splitter:
    def __init__(self, body: bytes, request: Descriptor) -> None:
        self.body = body
        self.group_type = request.fields_by_number[1].message_type  # ResourceSpans / ResourceLogs
        self.scope_type = self.group_type.fields_by_number[2].message_type  # ScopeSpans / ScopeLogs
        self.item_type = self.scope_type.fields_by_number[2].message_type  # Span / LogRecord
        self.split = Split()
        self.view = memoryview(body)
        self.current: list[bytes | memoryview] = []  # the framed resource groups of the piece being filled, in parts
        self.size = 0

    def run(self) -> Split:
        for number, _, payload, end in _fields(self.body, 0, len(self.body)):
            if number == 1:
                self._group(payload, end)
        self._flush()
        return self.split

    def _group(self, start: int, end: int) -> None:
        header, scopes = [], []
        for number, begin, payload, stop in _fields(self.body, start, end):
            if number == 2:
                scopes.append((payload, stop))
            else:
                header.append(self.body[begin:stop])
        head = b"".join(header)
        problem = self._dense(head, self.group_type, "resource")
        if problem:
            self.split.reject(sum(self._count_items(s, e) for s, e in scopes), problem)
            return
        for scope_start, scope_end in scopes:
            self._scope(head, scope_start, scope_end)

    def _scope(self, group_head: bytes, start: int, end: int) -> None:
        header: list[tuple[int, int, int]] = []
        items: list[tuple[int, int, int]] = []
        for number, begin, payload, stop in _fields(self.body, start, end):
            (items if number == 2 else header).append((begin, payload, stop))
        head = b"".join(self.body[b:s] for b, _, s in header)
        problem = self._dense(head, self.scope_type, "scope")
        if problem:
            self.split.reject(len(items), problem)
            return
        kept: list[memoryview] = []
        for begin, payload, stop in items:
            item = self.view[begin:stop]  # not copied: ``_flush`` copies each span once, into its piece
            problem = density_problem(self.body[payload:stop], self.item_type) if len(item) > CHUNK_BYTES else ""
            if problem:
                what = "span" if self.item_type.name == "Span" else "log record"
                self.split.reject(1, f"a {what} of {stop - payload:,} bytes {problem}")
                continue
            if kept and self.size + len(group_head) + len(head) + len(item) > CHUNK_BYTES:
                self._add(group_head, head, kept)
                self._flush()
                kept = []
            kept.append(item)
            self.size += len(item)
        if kept:
            self._add(group_head, head, kept)

    def _add(self, group_head: bytes, scope_head: bytes, items: list[memoryview]) -> None:
        """One resource group of one scope group holding ``items``, as the pieces ``_flush`` joins."""
        scope_length = len(scope_head) + sum(len(item) for item in items)
        scope_key = _encode_varint(2 << 3 | 2) + _encode_varint(scope_length)
        group_key = _encode_varint(1 << 3 | 2) + _encode_varint(len(group_head) + len(scope_key) + scope_length)
        self.current.extend((group_key, group_head, scope_key, scope_head, *items))
        self.size += len(group_head) + len(scope_head)

    def _flush(self) -> None:
        if self.current:
            self.split.pieces.append(b"".join(self.current))
        self.current, self.size = [], 0

    def _dense(self, head: bytes, descriptor: Descriptor, what: str) -> str:
        problem = density_problem(head, descriptor) if len(head) > HEADER_BYTES else ""
        return f"the {what} of {len(head):,} bytes {problem}" if problem else ""

    def _count_items(self, start: int, end: int) -> int:
        return sum(1 for number, *_ in _fields(self.body, start, end) if number == 2)
