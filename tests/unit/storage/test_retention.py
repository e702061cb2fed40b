"""Retention TTLs on the embedded engine: set, unchanged, removed, and old rows really go."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from spanscore.records import SpanRecord
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.schema.retention import SCORE_TABLES, SPAN_TABLES, apply_ttls, ttl_statements
from tests.unit.storage.test_rollups import make_scores

DAY_NS = 86_400 * 10**9


def engine(store: ClickHouseStore, table: str) -> str:
    return str(
        store.client.command(
            f"SELECT engine_full FROM system.tables WHERE database = '{store.database}' AND name = '{table}'"
        )
    )


def test_sets_changes_and_removes_ttls(store: ClickHouseStore) -> None:
    db = store.database
    issued = apply_ttls(store.client, db, spans_days=7, scores_days=90)
    assert len(issued) == len(SPAN_TABLES) + len(SCORE_TABLES)
    assert "TTL toDateTime(Timestamp) + toIntervalDay(7)" in engine(store, "otel_traces")
    assert "TTL TimestampTime + toIntervalDay(7)" in engine(store, "otel_logs")
    assert "TTL toDateTime(RunTimestamp) + toIntervalDay(90)" in engine(store, "scores")
    assert "TTL toDateTime(RunTimestamp) + toIntervalDay(90)" in engine(store, "score_decisions")
    assert "TTL toDateTime(RunTimestamp) + toIntervalDay(90)" in engine(store, "scored_runs")

    assert apply_ttls(store.client, db, 7, 90) == []  # already there: nothing issued
    assert apply_ttls(store.client, db, 7, 30) == [
        f"ALTER TABLE {db}.scores MODIFY TTL toDateTime(RunTimestamp) + INTERVAL 30 DAY",
        f"ALTER TABLE {db}.score_decisions MODIFY TTL toDateTime(RunTimestamp) + INTERVAL 30 DAY",
        f"ALTER TABLE {db}.scored_runs MODIFY TTL toDateTime(RunTimestamp) + INTERVAL 30 DAY",
    ]
    assert apply_ttls(store.client, db, 0, 30) == [f"ALTER TABLE {db}.{table} REMOVE TTL" for table, _ in SPAN_TABLES]
    assert " TTL " not in engine(store, "otel_traces")
    assert apply_ttls(store.client, db, 0, 0) == [f"ALTER TABLE {db}.{table} REMOVE TTL" for table, _ in SCORE_TABLES]
    assert apply_ttls(store.client, db, 0, 0) == []  # no TTL to remove: no error, nothing issued
    assert " TTL " not in engine(store, "scores_1h")  # roll-ups keep their history


def test_expired_rows_are_deleted(store: ClickHouseStore) -> None:
    db = store.database
    now = time.time_ns()
    spans = [
        SpanRecord(f"{i:032x}", f"{i:016x}", "", "run", "Internal", now - age * DAY_NS, now - age * DAY_NS + 1000)
        for i, age in enumerate([0, 1, 10, 20])
    ]
    store.insert_spans_sync(spans)
    recent = [replace(row, run_timestamp_ns=now - DAY_NS) for row in make_scores(20)]
    old = [replace(row, run_timestamp_ns=now - 400 * DAY_NS) for row in make_scores(5, seed=99)]
    store.insert_scores_sync(recent + old)

    apply_ttls(store.client, db, spans_days=5, scores_days=365)
    for table in ("otel_traces", "scores"):
        store.client.command(f"OPTIMIZE TABLE {db}.{table} FINAL")

    assert store.internal_query(f"SELECT count() FROM {db}.otel_traces")[0][0] == 2
    # The five 400-day-old scores go; the roll-ups keep having counted them.
    assert store.internal_query(f"SELECT count() FROM {db}.scores")[0][0] == 20
    assert store.internal_query(f"SELECT countMerge(ScoresState) FROM {db}.scores_1h")[0][0] == 25


def test_cluster_statements_target_local_tables() -> None:
    statements = ttl_statements("spanscore", 3, 0, cluster="prod")
    assert statements[0] == (
        "ALTER TABLE spanscore.otel_traces_local ON CLUSTER prod MODIFY TTL toDateTime(Timestamp) + INTERVAL 3 DAY"
    )
    assert statements[-1] == "ALTER TABLE spanscore.scored_runs_local ON CLUSTER prod REMOVE TTL"


@pytest.mark.parametrize(
    ("database", "spans", "scores", "cluster", "message"),
    [
        ("bad-name", 1, 1, None, "storage.database"),
        ("ok", -1, 1, None, "storage.spans_ttl_days"),
        ("ok", 1, 1.5, None, "storage.scores_ttl_days"),
        ("ok", 1, 1, "x; DROP", "cluster"),
    ],
)
def test_rejects_bad_arguments(database: str, spans: int, scores: int, cluster: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ttl_statements(database, spans, scores, cluster=cluster)
