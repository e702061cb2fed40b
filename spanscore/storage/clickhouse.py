"""ClickHouse through clickhouse-connect: the embedded chDB engine or a server, one code path.

``chdb:///abs/path`` opens the embedded engine in this process; ``clickhouse://``,
``http://`` and ``https://`` DSNs reach a server or cluster. Only the DSN
differs. All calls are blocking, so the service runs them on a dedicated thread
(one writer thread, one reader thread) and never on its event loop; the chDB
backend serialises engine calls itself.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlparse

import clickhouse_connect
from clickhouse_connect.driver.exceptions import ClickHouseError, DatabaseError, OperationalError

from spanscore.collector.model import LogRecord, SpanRecord
from spanscore.errors import PermanentError, RetryableError
from spanscore.storage.guard import QueryLimits, explain_engine_error, guard_query
from spanscore.storage.migrations import migrate
from spanscore.storage.retention import apply_ttls
from spanscore.storage.rows import LOG_COLUMNS, log_columns, records_to_json
from spanscore.storage.scored_runs import SCORED_RUN_COLUMNS, ScoredRunRow, scored_run_columns
from spanscore.storage.scores import DECISION_COLUMNS, SCORE_COLUMNS, DecisionRow, ScoreRow, to_columns

log = logging.getLogger(__name__)

QUERY_FORMATS = {"json": "JSON", "jsoneachrow": "JSONEachRow", "csv": "CSVWithNames", "tsv": "TSVWithNames"}


def is_embedded(dsn: str) -> bool:
    return dsn.startswith("chdb:")


def connect(dsn: str, database: str) -> Any:
    """Open a clickhouse-connect client for ``dsn``; the embedded path is created if needed."""
    if is_embedded(dsn):
        path = urlparse(dsn).path
        if path and path.startswith("/"):
            os.makedirs(path, exist_ok=True)
        return clickhouse_connect.get_client(dsn=dsn)
    # Servers: the database may not exist before the first migration, so connect to default.
    client = clickhouse_connect.get_client(dsn=dsn, database="default", autogenerate_session_id=False)
    return client


# A retried batch is the same block, so the tables' deduplication windows (migration 0006) drop
# what an earlier, partly failed attempt already wrote, in otel_traces and in the views below it.
_SPAN_INSERT = {"insert_deduplicate": 1, "deduplicate_blocks_in_dependent_materialized_views": 1}


class ClickHouseStore:
    """Owns one client; exposes async inserts and guarded reads that run off the event loop."""

    def __init__(
        self,
        dsn: str,
        database: str,
        *,
        limits: QueryLimits | None = None,
        spans_ttl_days: int = 0,
        scores_ttl_days: int = 0,
        cluster: str | None = None,
    ) -> None:
        self._retention = (spans_ttl_days, scores_ttl_days)
        self.cluster = cluster
        self.dsn = dsn
        self.database = database
        self.limits = limits or QueryLimits()
        self._client: Any = None
        # User queries get their own connection: a failed one must not disturb spanscore's own calls.
        self._query_client: Any = None
        self._query_lock = threading.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spanscore-insert")
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spanscore-query")

    # -- lifecycle ------------------------------------------------------------------------------

    def open(self) -> None:
        """Connect and bring the schema up to date (blocking; call before serving)."""
        if self._client is None:
            self._client = connect(self.dsn, self.database)
            applied = migrate(self._client, self.database, cluster=self.cluster)
            apply_ttls(self._client, self.database, *self._retention, cluster=self.cluster)
            # Unqualified names in user queries resolve to spanscore's database.
            self._client.database = self.database
            self._query_client = connect(self.dsn, self.database)
            self._query_client.database = self.database
            if applied:
                log.info("schema migrated versions=%s dsn=%s", applied, _redact(self.dsn))

    def close(self) -> None:
        self._writer.shutdown(wait=True)
        self._reader.shutdown(wait=True)
        if self._query_client is not None:
            self._query_client.close()
            self._query_client = None
        if self._client is not None:
            self._client.close()
            self._client = None

    @property
    def client(self) -> Any:
        if self._client is None:
            raise RuntimeError("store is not open")
        return self._client

    # -- writes ---------------------------------------------------------------------------------

    def insert_spans_sync(self, spans: Sequence[SpanRecord]) -> None:
        """Spans go in as JSON rows through ``otel_traces_intake`` (see migration 0005).

        orjson writes the records in C and the engine parses them without holding the GIL, so
        the event loop keeps decoding the next requests meanwhile. Every string is valid UTF-8:
        both decoders refuse unpaired surrogates before a record exists.
        """
        if spans:
            self.insert_span_json_sync(records_to_json(spans))

    def insert_span_json_sync(self, body: bytes) -> None:
        """Insert spans already encoded by ``records_to_json`` (the spool's bytes, reused as they are)."""
        self._guarded(
            "otel_traces_intake",
            lambda: self.client.raw_insert(
                f"{self.database}.otel_traces_intake", insert_block=body, fmt="JSONEachRow", settings=_SPAN_INSERT
            ),
        )

    def insert_logs_sync(self, logs: Sequence[LogRecord]) -> None:
        self._insert("otel_logs", LOG_COLUMNS, log_columns(logs))

    def _insert(self, table: str, columns: Sequence[str], data: list[list[Any]]) -> None:
        if not data or not data[0]:
            return
        self._guarded(
            table,
            lambda: self.client.insert(
                f"{self.database}.{table}", data, column_names=list(columns), column_oriented=True
            ),
        )

    @staticmethod
    def _guarded(table: str, insert: Callable[[], object]) -> None:
        """Run one insert; every engine or transport failure becomes retryable (the spool keeps the rows)."""
        try:
            insert()
        except OperationalError as exc:
            raise RetryableError(f"storage unavailable: {exc}", retry_after=2.0) from exc
        except ClickHouseError as exc:
            raise RetryableError(f"storage rejected the insert into {table}: {exc}", retry_after=2.0) from exc

    def insert_scores_sync(self, rows: Sequence[ScoreRow]) -> None:
        self._insert("scores", SCORE_COLUMNS, to_columns(rows))

    def insert_decisions_sync(self, rows: Sequence[DecisionRow]) -> None:
        self._insert("score_decisions", DECISION_COLUMNS, to_columns(rows))

    def insert_scored_runs_sync(self, rows: Sequence[ScoredRunRow]) -> None:
        self._insert("scored_runs", SCORED_RUN_COLUMNS, scored_run_columns(rows))

    async def insert_scored_runs(self, rows: Sequence[ScoredRunRow]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._writer, self.insert_scored_runs_sync, rows)

    async def insert_scores(self, rows: Sequence[ScoreRow]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._writer, self.insert_scores_sync, rows)

    async def insert_decisions(self, rows: Sequence[DecisionRow]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._writer, self.insert_decisions_sync, rows)

    async def insert_spans(self, spans: Sequence[SpanRecord]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._writer, self.insert_spans_sync, spans)

    async def insert_span_json(self, body: bytes) -> None:
        await asyncio.get_running_loop().run_in_executor(self._writer, self.insert_span_json_sync, body)

    async def insert_logs(self, logs: Sequence[LogRecord]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._writer, self.insert_logs_sync, logs)

    # -- reads ----------------------------------------------------------------------------------

    def query_sync(self, sql: str, fmt: str = "json") -> bytes:
        """Run an untrusted read query under the guard; returns the engine's formatted output."""
        engine_format = QUERY_FORMATS.get(fmt.lower())
        if engine_format is None:
            raise PermanentError(f"unknown format {fmt!r}; use one of {', '.join(QUERY_FORMATS)}")
        guarded = guard_query(sql, self.limits)
        if self._query_client is None:
            raise RuntimeError("store is not open")
        with self._query_lock:
            try:
                result: bytes = self._query_client.raw_query(guarded, fmt=engine_format)
            except DatabaseError as exc:
                if is_embedded(self.dsn):
                    _discard_partial_output(self._query_client)
                raise PermanentError(explain_engine_error(_clean_engine_error(str(exc)), self.limits)) from None
            except OperationalError as exc:
                raise RetryableError(f"storage unavailable: {exc}") from exc
        return result

    async def query(self, sql: str, fmt: str = "json") -> bytes:
        return await asyncio.get_running_loop().run_in_executor(self._reader, self.query_sync, sql, fmt)

    def read_sync(self, sql: str, parameters: dict[str, Any]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        """Fixed SQL with bound parameters, run like a user query (the dashboard's reads).

        Same connection, lock, read-only mode and time and memory limits as ``query_sync``: a
        read cut by a limit leaves no partial output on spanscore's own connection.
        """
        if self._query_client is None:
            raise RuntimeError("store is not open")
        settings = {
            "readonly": 1,
            "max_execution_time": self.limits.max_execution_time_s,
            "max_memory_usage": self.limits.max_memory_bytes,
        }
        with self._query_lock:
            try:
                result = self._query_client.query(sql, parameters=parameters, settings=settings)
            except DatabaseError as exc:
                if is_embedded(self.dsn):
                    _discard_partial_output(self._query_client)
                raise PermanentError(explain_engine_error(_clean_engine_error(str(exc)), self.limits)) from None
            except OperationalError as exc:
                raise RetryableError(f"storage unavailable: {exc}") from exc
        return tuple(result.column_names), list(result.result_rows)

    async def read(self, sql: str, parameters: dict[str, Any]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        return await asyncio.get_running_loop().run_in_executor(self._reader, self.read_sync, sql, parameters)

    def internal_query(self, sql: str, parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Trusted SQL written by spanscore itself; values always travel as bound parameters."""
        return list(self.client.query(sql, parameters=parameters).result_rows)


def _discard_partial_output(client: Any) -> None:
    """Take what a failed query left on an embedded connection.

    chDB (4.4) keeps the output a query wrote before it failed (a time limit, the row cap)
    on its connection and prepends it to the next query's result, which would hand one
    caller's partial rows to the next. One throwaway query takes that output.
    """
    try:
        client.raw_query("SELECT 1 WHERE 0", fmt="TabSeparated")
    except ClickHouseError as exc:
        log.warning("could not clear a failed query's output error=%s", exc)


def _clean_engine_error(message: str) -> str:
    """Keep the engine's one-line reason, not the driver's stack of wrappers."""
    for line in message.splitlines():
        if "DB::Exception" in line or line.startswith("Code:"):
            return line.strip()
    return message.strip().splitlines()[0] if message.strip() else "query failed"


def _redact(dsn: str) -> str:
    parsed = urlparse(dsn)
    if parsed.password:
        return dsn.replace(f":{parsed.password}@", ":***@")
    return dsn
