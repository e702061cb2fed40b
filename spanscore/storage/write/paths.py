"""The durable write paths (spans, logs, scores, decisions, scored runs), built the same way from the storage config.

Each is a ``BatchWriter`` (group commit) in front of its own write-ahead spool and
dead letters under ``storage.spool_dir``, with the partition key its table is split
by when the engine refuses a batch. Scores and decisions go through the same spool as
spans, so a storage outage of any length loses none of them: past the spool's size
the writer answers with backpressure and scoring waits.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import orjson

from spanscore.pipeline import Consumer
from spanscore.records import LogRecord, SpanRecord
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.rows import join_json_arrays, logs_from_json, records_to_json, spans_from_json
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import DecisionRow, ScoreRow
from spanscore.storage.write.deadletter import DeadLetters
from spanscore.storage.write.salvage import DAY_NS, InsertFn, PartitionKey, Salvager
from spanscore.storage.write.spool import Spool, SpoolCodec
from spanscore.storage.write.writer import BatchWriter, EncodedInsertFn
from spanscore.storage.write.writer_config import WriterConfig

if TYPE_CHECKING:
    from spanscore.storage.config import StorageConfig

T = TypeVar("T")

WRITERS = ("spans", "logs", "scores", "decisions", "scored_runs", "feedback")
SCORE_ROWS_PENDING = 100_000
"""Score or decision rows waiting for a flush beyond which scoring is told to wait."""


def spool_for(storage: StorageConfig, name: str, codec: SpoolCodec[T]) -> Spool[T]:
    """The write path's spool, which stops at half the store's free-space floor.

    When it shares the embedded store's disk (the default), inserts stop first and the spool then keeps the
    rest of the room for the engine's merges.
    """
    return Spool(
        Path(storage.spool_dir) / name, storage.spool_max_bytes, codec, min_free_bytes=storage.min_free_disk_bytes // 2
    )


def _scores_from_json(data: bytes) -> list[ScoreRow]:
    return [ScoreRow(**item) for item in orjson.loads(data)]


def _decisions_from_json(data: bytes) -> list[DecisionRow]:
    return [DecisionRow(**item) for item in orjson.loads(data)]


def _scored_runs_from_json(data: bytes) -> list[ScoredRunRow]:
    return [ScoredRunRow(**item) for item in orjson.loads(data)]


def _rows_to_json(rows: object) -> bytes:
    return orjson.dumps(rows if isinstance(rows, list) else list(rows))  # type: ignore[call-overload]


SPAN_SPOOL_CODEC: SpoolCodec[SpanRecord] = SpoolCodec(records_to_json, spans_from_json, join_json_arrays)
LOG_SPOOL_CODEC: SpoolCodec[LogRecord] = SpoolCodec(records_to_json, logs_from_json)
SCORE_SPOOL_CODEC: SpoolCodec[ScoreRow] = SpoolCodec(_rows_to_json, _scores_from_json)
DECISION_SPOOL_CODEC: SpoolCodec[DecisionRow] = SpoolCodec(_rows_to_json, _decisions_from_json)
SCORED_RUN_SPOOL_CODEC: SpoolCodec[ScoredRunRow] = SpoolCodec(_rows_to_json, _scored_runs_from_json)


def _span_day(span: SpanRecord) -> int:
    return span.start_time_ns // DAY_NS


def _log_day(record: LogRecord) -> int:
    return record.time_ns // DAY_NS


def _run_day(row: ScoreRow | DecisionRow | ScoredRunRow) -> int:
    return row.run_timestamp_ns // DAY_NS


def dead_letter_dir(spool_dir: str | Path, writer: str) -> Path:
    return Path(spool_dir) / "deadletter" / writer


def open_dead_letters(spool_dir: str | Path) -> dict[str, DeadLetters[object]]:
    """Every writer's dead letters, for the CLI when no service runs (codecs decode them as written)."""
    codecs: dict[str, SpoolCodec[object]] = {
        "spans": SPAN_SPOOL_CODEC,  # type: ignore[dict-item]
        "logs": LOG_SPOOL_CODEC,  # type: ignore[dict-item]
        "scores": SCORE_SPOOL_CODEC,  # type: ignore[dict-item]
        "decisions": DECISION_SPOOL_CODEC,  # type: ignore[dict-item]
        "scored_runs": SCORED_RUN_SPOOL_CODEC,  # type: ignore[dict-item]
        "feedback": SCORE_SPOOL_CODEC,  # type: ignore[dict-item]
    }
    return {name: DeadLetters(dead_letter_dir(spool_dir, name), name, codecs[name]) for name in WRITERS}


def _writer(
    name: str,
    insert: InsertFn[T],
    storage: StorageConfig,
    codec: SpoolCodec[T],
    partition_key: PartitionKey[T],
    *,
    max_pending: int,
    acknowledge: str = "stored",
    insert_encoded: EncodedInsertFn | None = None,
    stored: Consumer[Sequence[T]] | None = None,
    insert_bulk: InsertFn[T] | None = None,
) -> BatchWriter[T]:
    spooling = storage.spool_max_bytes > 0 and bool(storage.spool_dir)
    if not spooling:
        acknowledge = "stored"  # no spool to acknowledge from (the config allows that only by default)
    dead = DeadLetters(dead_letter_dir(storage.spool_dir, name), name, codec) if storage.spool_dir else None
    config = WriterConfig.from_storage(
        storage, max_pending=max_pending, acknowledge=acknowledge, bulk=insert_bulk is not None
    )
    return BatchWriter(
        name,
        insert,
        config,
        spool=spool_for(storage, name, codec) if spooling else None,
        salvager=Salvager(name, dead, partition_key),
        insert_encoded=insert_encoded,
        stored=stored,
        insert_bulk=insert_bulk,
    )


def span_writer(
    store: ClickHouseStore, storage: StorageConfig, stored: Consumer[Sequence[SpanRecord]] | None = None
) -> BatchWriter[SpanRecord]:
    """Spans, acknowledged as ``storage.acknowledge`` says; ``stored`` gets each batch once it is inserted."""
    return _writer(
        "spans",
        store.insert_spans,
        storage,
        SPAN_SPOOL_CODEC,
        _span_day,
        max_pending=storage.max_pending_spans,
        acknowledge=storage.acknowledge,
        insert_encoded=store.insert_span_json,
        stored=stored,
        insert_bulk=store.insert_spans_bulk,
    )


def log_writer(
    store: ClickHouseStore, storage: StorageConfig, stored: Consumer[Sequence[LogRecord]] | None = None
) -> BatchWriter[LogRecord]:
    return _writer(
        "logs",
        store.insert_logs,
        storage,
        LOG_SPOOL_CODEC,
        _log_day,
        max_pending=storage.max_pending_spans,
        acknowledge=storage.acknowledge,
        stored=stored,
        insert_bulk=store.insert_logs_bulk,
    )


def score_writer(store: ClickHouseStore, storage: StorageConfig) -> BatchWriter[ScoreRow]:
    """Scores are acknowledged once stored or spooled: a worker's result is never held for an outage."""
    return _writer("scores", store.insert_scores, storage, SCORE_SPOOL_CODEC, _run_day, max_pending=SCORE_ROWS_PENDING)


def feedback_writer(store: ClickHouseStore, storage: StorageConfig) -> BatchWriter[ScoreRow]:
    """Outside scores (POST /api/v1/scores, OTLP evaluation results) into ``scores``, with their own spool."""
    return _writer(
        "feedback", store.insert_scores, storage, SCORE_SPOOL_CODEC, _run_day, max_pending=SCORE_ROWS_PENDING
    )


def decision_writer(store: ClickHouseStore, storage: StorageConfig) -> BatchWriter[DecisionRow]:
    return _writer(
        "decisions", store.insert_decisions, storage, DECISION_SPOOL_CODEC, _run_day, max_pending=SCORE_ROWS_PENDING
    )


def scored_run_writer(store: ClickHouseStore, storage: StorageConfig) -> BatchWriter[ScoredRunRow]:
    """What the scorers received, kept as durably as the scores it explains."""
    return _writer(
        "scored_runs",
        store.insert_scored_runs,
        storage,
        SCORED_RUN_SPOOL_CODEC,
        _run_day,
        max_pending=SCORE_ROWS_PENDING,
    )
