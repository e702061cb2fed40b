"""The durable write paths (spans, logs, scores, decisions, scored runs), built the same way from the storage config.

Each is a ``BatchWriter`` (group commit) in front of its own write-ahead spool and
dead letters under ``storage.spool_dir``, with the partition key its table is split
by when the engine refuses a batch. Scores and decisions go through the same spool as
spans, so a storage outage of any length loses none of them: past the spool's size
the writer answers with backpressure and scoring waits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import orjson

from spanscore.pipeline import Calling, Consumer
from spanscore.records import LogRecord, SpanRecord
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.metric_rows import MetricPoint, metric_points_from_json, metric_points_to_json
from spanscore.storage.rows import (
    is_json_array,
    json_array_pieces,
    logs_from_json,
    records_to_json,
    records_to_json_parts,
    spans_from_json,
)
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import DecisionRow, ScoreRow
from spanscore.storage.write.deadletter import DeadLetters
from spanscore.storage.write.salvage import DAY_NS, PartitionKey, Salvager
from spanscore.storage.write.spool import SpoolCodec
from spanscore.storage.write.spool_log import SpoolLog
from spanscore.storage.write.writer import BatchWriter, Inserts
from spanscore.storage.write.writer_config import WriterConfig

if TYPE_CHECKING:
    from spanscore.storage.config import StorageConfig

T = TypeVar("T")
R = TypeVar("R", ScoreRow, DecisionRow, ScoredRunRow)

WRITERS = ("spans", "logs", "scores", "decisions", "scored_runs", "feedback", "metrics")
SCORE_ROWS_PENDING = 100_000
"""Score or decision rows waiting for a flush beyond which scoring is told to wait."""


def spool_for(storage: StorageConfig, name: str, codec: SpoolCodec[T]) -> SpoolLog[T]:
    """The write path's spool (an append-only log), which stops at half the store's free-space floor.

    When it shares the embedded store's disk (the default), inserts stop first and the spool then keeps the
    rest of the room for the engine's merges.
    """
    return SpoolLog(
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


SPAN_SPOOL_CODEC: SpoolCodec[SpanRecord] = SpoolCodec(
    records_to_json, spans_from_json, records_to_json_parts, json_array_pieces, joinable=is_json_array
)
LOG_SPOOL_CODEC: SpoolCodec[LogRecord] = SpoolCodec(records_to_json, logs_from_json)
METRIC_SPOOL_CODEC: SpoolCodec[MetricPoint] = SpoolCodec(metric_points_to_json, metric_points_from_json)
SCORE_SPOOL_CODEC: SpoolCodec[ScoreRow] = SpoolCodec(_rows_to_json, _scores_from_json)
DECISION_SPOOL_CODEC: SpoolCodec[DecisionRow] = SpoolCodec(_rows_to_json, _decisions_from_json)
SCORED_RUN_SPOOL_CODEC: SpoolCodec[ScoredRunRow] = SpoolCodec(_rows_to_json, _scored_runs_from_json)


def _span_day(span: SpanRecord) -> int:
    return span.start_time_ns // DAY_NS


def _log_day(record: LogRecord) -> int:
    return record.time_ns // DAY_NS


def _metric_day(point: MetricPoint) -> int:
    return point.time_ns // DAY_NS


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
        "metrics": METRIC_SPOOL_CODEC,  # type: ignore[dict-item]
    }
    return {name: DeadLetters(dead_letter_dir(spool_dir, name), name, codecs[name]) for name in WRITERS}


def _writer(
    name: str,
    inserts: Inserts[T],
    storage: StorageConfig,
    codec: SpoolCodec[T],
    partition_key: PartitionKey[T],
    *,
    max_pending: int,
    acknowledge: str = "stored",
    stored: Consumer[Sequence[T]] | None = None,
    flush_interval_s: float | None = None,
) -> BatchWriter[T]:
    spooling = storage.spool_max_bytes > 0 and bool(storage.spool_dir)
    if not spooling:
        acknowledge = "stored"  # no spool to acknowledge from (the config allows that only by default)
    dead = DeadLetters(dead_letter_dir(storage.spool_dir, name), name, codec) if storage.spool_dir else None
    config = WriterConfig.from_storage(
        storage, max_pending=max_pending, acknowledge=acknowledge, bulk=inserts.bulk is not None
    )
    if flush_interval_s is not None:
        config = replace(config, flush_interval=flush_interval_s)
    return BatchWriter(
        name,
        inserts,
        config,
        spool=spool_for(storage, name, codec) if spooling else None,
        salvager=Salvager(name, dead, partition_key),
        stored=stored,
    )


def span_writer(
    store: ClickHouseStore, storage: StorageConfig, stored: Consumer[Sequence[SpanRecord]] | None = None
) -> BatchWriter[SpanRecord]:
    """Spans, acknowledged as ``storage.acknowledge`` says; ``stored`` gets each batch once it is inserted."""
    inserts = Inserts(
        Calling(store.insert_spans), encoded=Calling(store.insert_span_json), bulk=Calling(store.insert_spans_bulk)
    )
    return _telemetry_writer("spans", inserts, storage, SPAN_SPOOL_CODEC, _span_day, stored)


def log_writer(
    store: ClickHouseStore, storage: StorageConfig, stored: Consumer[Sequence[LogRecord]] | None = None
) -> BatchWriter[LogRecord]:
    inserts = Inserts(Calling(store.insert_logs), bulk=Calling(store.insert_logs_bulk))
    return _telemetry_writer("logs", inserts, storage, LOG_SPOOL_CODEC, _log_day, stored)


def metric_writer(store: ClickHouseStore, storage: StorageConfig) -> BatchWriter[MetricPoint]:
    """OTLP metric points, acknowledged and spooled as spans and logs are."""
    inserts = Inserts(Calling(store.insert_metrics), bulk=Calling(store.insert_metrics_bulk))
    return _telemetry_writer("metrics", inserts, storage, METRIC_SPOOL_CODEC, _metric_day, None)


def _telemetry_writer(
    name: str,
    inserts: Inserts[T],
    storage: StorageConfig,
    codec: SpoolCodec[T],
    partition_key: PartitionKey[T],
    stored: Consumer[Sequence[T]] | None,
) -> BatchWriter[T]:
    """Spans, logs and metrics: acknowledged as ``storage.acknowledge`` says, bounded by ``max_pending_spans``."""
    return _writer(
        name,
        inserts,
        storage,
        codec,
        partition_key,
        max_pending=storage.max_pending_spans,
        acknowledge=storage.acknowledge,
        stored=stored,
    )


def _row_writer(
    name: str,
    insert: Callable[[Sequence[R]], Awaitable[None]],
    storage: StorageConfig,
    codec: SpoolCodec[R],
    flush_interval_s: float | None = None,
) -> BatchWriter[R]:
    """Rows the service writes about runs (scores, decisions, scored runs): acknowledged once stored or spooled.

    ``flush_interval_s``: how long rows may wait to share an insert, when not ``storage.flush_interval_s``.
    """
    return _writer(
        name,
        Inserts(Calling(insert)),
        storage,
        codec,
        _run_day,
        max_pending=SCORE_ROWS_PENDING,
        flush_interval_s=flush_interval_s,
    )


def score_writer(store: ClickHouseStore, storage: StorageConfig) -> BatchWriter[ScoreRow]:
    """Scores are acknowledged once stored or spooled: a worker's result is never held for an outage.

    They wait up to ``storage.score_flush_interval_s`` to share an insert: each one into ``scores`` costs tens
    of milliseconds of engine CPU for its roll-up views, and nothing waits on a score row but its worker's
    hand-on, which returns at once (``scoring.outputs.InBackground``).
    """
    return _row_writer(
        "scores",
        store.insert_scores,
        storage,
        SCORE_SPOOL_CODEC,
        max(storage.flush_interval_s, storage.score_flush_interval_s),
    )


def feedback_writer(store: ClickHouseStore, storage: StorageConfig) -> BatchWriter[ScoreRow]:
    """Outside scores (POST /api/v1/scores, OTLP evaluation results) into ``scores``, with their own spool."""
    return _row_writer("feedback", store.insert_scores, storage, SCORE_SPOOL_CODEC)


def decision_writer(store: ClickHouseStore, storage: StorageConfig) -> BatchWriter[DecisionRow]:
    return _row_writer("decisions", store.insert_decisions, storage, DECISION_SPOOL_CODEC)


def scored_run_writer(store: ClickHouseStore, storage: StorageConfig) -> BatchWriter[ScoredRunRow]:
    """What the scorers received, kept as durably as the scores it explains."""
    return _row_writer("scored_runs", store.insert_scored_runs, storage, SCORED_RUN_SPOOL_CODEC)
