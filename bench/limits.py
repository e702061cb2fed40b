"""The physical limits on this machine, without sockets: decode alone and storage insert alone.

Both run in their own process (the embedded engine is one per process) and
loop until a count or a deadline. Decode is ``parse_traces`` +
``spans_from_request`` on the same pre-encoded bytes the load generator
sends; the insert is ``ClickHouseStore.insert_spans_sync`` of the rows that
decoding yields, into a fresh embedded store.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench.payloads import build_template
from spanscore.collector.decode import parse_traces, spans_from_request
from spanscore.records import SpanRecord
from spanscore.storage.clickhouse import ClickHouseStore


def decode_rate(spans_per_request: int, llm: bool, seconds: float, max_requests: int) -> dict[str, float]:
    """Spans per second through protobuf parse + row building, one thread."""
    template = build_template(spans_per_request, llm)
    bodies = [template.encode(sequence) for sequence in range(8)]
    spans = 0
    requests = 0
    start = time.perf_counter()
    deadline = start + seconds
    while requests < max_requests and time.perf_counter() < deadline:
        decoded = spans_from_request(parse_traces(bodies[requests % len(bodies)], json_body=False))
        spans += len(decoded.items)
        requests += 1
    elapsed = time.perf_counter() - start
    return {"spans_per_s": spans / elapsed, "requests": requests, "elapsed_s": elapsed}


def decoded_rows(count: int, llm: bool) -> list[SpanRecord]:
    """``count`` spans of the bench's template, decoded as the receiver decodes them."""
    template = build_template(min(count, 1000), llm)
    rows: list[SpanRecord] = []
    sequence = 0
    while len(rows) < count:
        rows.extend(spans_from_request(parse_traces(template.encode(sequence), json_body=False)).items)
        sequence += 1
    return rows[:count]


def insert_rate(spans_per_insert: int, llm: bool, seconds: float, max_inserts: int) -> dict[str, float]:
    """Spans per second through ``insert_spans_sync`` into a fresh embedded store, one thread."""
    rows = decoded_rows(spans_per_insert, llm)
    with tempfile.TemporaryDirectory(prefix="spanscore-bench-insert-") as workdir:
        store = ClickHouseStore(f"chdb:///{Path(workdir, 'data').as_posix().lstrip('/')}", "spanscore")
        store.open()
        try:
            store.insert_spans_sync(rows)  # warm-up: first insert creates parts and caches
            spans = 0
            inserts = 0
            start = time.perf_counter()
            deadline = start + seconds
            while inserts < max_inserts and time.perf_counter() < deadline:
                store.insert_spans_sync(rows)
                spans += len(rows)
                inserts += 1
            elapsed = time.perf_counter() - start
        finally:
            store.close()
    return {"spans_per_s": spans / elapsed, "inserts": inserts, "elapsed_s": elapsed}
