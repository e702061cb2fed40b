"""The spool log's on-disk form: framed records in numbered segment files, and the scan that recovers them.

A segment (``NNNNNNNNNNNN.log``) is a run of records, each a fixed header and a payload::

    magic "SSL1" | payload length u32 | crc32 u32 | sequence u64 | token 16 bytes | kind u8 | payload

The checksum covers everything after itself, payload included, so a record torn by a crash (a header
written without its payload, a payload half on disk, or the zeros of a preallocated tail) fails it. A
``BATCH`` record holds one encoded batch under its sequence number and insert deduplication token; a
``DONE`` record holds the sequence numbers of batches whose insert succeeded (the payload is their u64s).
The scan stops a segment at its first record that does not check out and reports where the valid part
ends, so the caller can cut the rest: the writer acknowledges a batch only after an ``fdatasync`` that
covered it and everything written before it, so nothing after a torn record was acknowledged.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MAGIC = b"SSL1"
HEADER = struct.Struct("<4sIIQ16sB")
BATCH = 1
DONE = 2
MAX_PAYLOAD = (1 << 32) - 1
SEGMENT_SUFFIX = ".log"
_NO_TOKEN = bytes(16)


def segment_name(number: int) -> str:
    return f"{number:012d}{SEGMENT_SUFFIX}"


def segment_number(path: Path) -> int | None:
    """The number in a segment's name, or None for any other file."""
    stem, suffix = path.name[: -len(SEGMENT_SUFFIX)], path.name[-len(SEGMENT_SUFFIX) :]
    return int(stem) if suffix == SEGMENT_SUFFIX and len(stem) == 12 and stem.isdigit() else None


def frame(
    kind: int, sequence: int, token: str | None, payload: Sequence[bytes | memoryview]
) -> list[bytes | memoryview]:
    """One record as its header and its payload's buffers (written one after another), to append together.

    Not one joined ``bytes``: a batch of LLM-sized spans is megabytes, and concatenating it copied every byte
    with the GIL held (7% of the GIL's time under 13,800 such spans/s, #43); the kernel gathers the buffers
    instead (``SegmentWriter.append``).
    """
    size = sum(map(len, payload))
    if size > MAX_PAYLOAD:
        raise ValueError(f"a spool log record holds at most {MAX_PAYLOAD} bytes, got {size}")
    raw_token = bytes.fromhex(token) if token is not None else _NO_TOKEN
    tail = struct.pack("<Q16sB", sequence, raw_token, kind)
    crc = zlib.crc32(tail)
    for buffer in payload:
        crc = zlib.crc32(buffer, crc)  # zlib lets the GIL go over a large buffer
    return [HEADER.pack(MAGIC, size, crc, sequence, raw_token, kind), *payload]


def done_payload(sequences: list[int]) -> bytes:
    return struct.pack(f"<{len(sequences)}Q", *sequences)


def done_sequences(payload: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(payload) // 8}Q", payload))


@dataclass(frozen=True, slots=True)
class Record:
    kind: int
    sequence: int
    token: str
    offset: int
    """Where the payload starts in its segment."""
    length: int
    payload: bytes | None
    """Read for ``DONE`` records only: a batch's bytes are read again when its turn comes."""


def scan(path: Path) -> tuple[list[Record], int]:
    """The records of one segment that check out, in order, and the offset where the valid part ends."""
    records: list[Record] = []
    end = 0
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        for record in _records(handle, size):
            records.append(record)
            end = record.offset + record.length
    return records, end


def _records(handle: BinaryIO, size: int) -> Iterator[Record]:
    read = handle.read
    offset = 0
    while offset + HEADER.size <= size:
        header = read(HEADER.size)
        magic, length, crc, sequence, raw_token, kind = HEADER.unpack(header)
        start = offset + HEADER.size
        if magic != MAGIC or kind not in (BATCH, DONE) or start + length > size:
            return
        payload = read(length)
        if len(payload) != length or zlib.crc32(payload, zlib.crc32(header[12:])) != crc:
            return
        yield Record(kind, sequence, raw_token.hex(), start, length, payload if kind == DONE else None)
        offset = start + length


def cut(path: Path, end: int) -> None:
    """Drop what follows ``end`` in a segment (a torn record, or a preallocated tail), durably."""
    with open(path, "r+b") as handle:
        if os.fstat(handle.fileno()).st_size != end:
            handle.truncate(end)
            os.fsync(handle.fileno())


def read_payload(path: Path, offset: int, length: int) -> bytes:
    with open(path, "rb") as handle:
        data = os.pread(handle.fileno(), length, offset)
    if len(data) != length:
        raise RuntimeError(f"the spool log segment {path} ends before the batch at {offset} ({length} bytes)")
    return data
