"""Below ``storage.min_free_disk_bytes`` the engine refuses spanscore's inserts, retryably, and reads go on.

The floor keeps a full disk from reaching the engine's merges: a merge that met a disk filled to the last byte
committed a part with an empty marks file, and every read of that table failed after it.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from spanscore.errors import RetryableError
from spanscore.storage.clickhouse import ClickHouseStore
from tests.unit.collector.recorded_traces import load


def _spans() -> list:  # type: ignore[type-arg]
    spans, _ = load("otel_genai_logs")
    shift = time.time_ns() - min(span.start_time_ns for span in spans)
    return [replace(s, start_time_ns=s.start_time_ns + shift, end_time_ns=s.end_time_ns + shift) for s in spans]


def test_inserts_under_the_floor_are_refused_retryably_and_reads_go_on(chdb_dsn: str, database_name: str) -> None:
    store = ClickHouseStore(chdb_dsn, database_name, min_free_disk_bytes=1 << 60)  # more than any disk has
    store.open()
    try:
        with pytest.raises(RetryableError, match="Code: 243") as caught:
            store.insert_spans_sync(_spans())
        assert "min_free_disk_bytes_to_perform_insert" in str(caught.value)
        assert store.internal_query(f"SELECT count() FROM {database_name}.otel_traces")[0][0] == 0
    finally:
        store.close()


def test_without_the_floor_the_same_insert_is_stored(chdb_dsn: str, database_name: str) -> None:
    store = ClickHouseStore(chdb_dsn, database_name, min_free_disk_bytes=0)
    store.open()
    try:
        spans = _spans()
        store.insert_spans_sync(spans)
        assert store.internal_query(f"SELECT count() FROM {database_name}.otel_traces")[0][0] == len(spans)
    finally:
        store.close()
