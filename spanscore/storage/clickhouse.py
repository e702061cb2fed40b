"""ClickHouse through clickhouse-connect: the embedded chDB engine or a server, one code path.

``chdb:///abs/path`` opens the embedded engine in this process; ``clickhouse://``,
``http://`` and ``https://`` DSNs reach a server or cluster. Only the DSN
differs. All calls are blocking, so the service runs them off its event loop: one
writer thread, a small pool of reader connections for API queries (see ``readers``)
and one reader connection kept for the dashboard, so no API client can starve it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from clickhouse_connect.driver.exceptions import ClickHouseError, DatabaseError, DataError, OperationalError

from spanscore.errors import PermanentError, RetryableError
from spanscore.records import LogRecord, SpanRecord
from spanscore.storage.config import StorageConfig
from spanscore.storage.connection import clean_engine_error, connect, discard_partial_output, is_embedded, redact
from spanscore.storage.insert_errors import classify_engine_error, encoding_error
from spanscore.storage.insert_token import run_with_token, token_settings
from spanscore.storage.metric_rows import MetricPoint, metric_columns
from spanscore.storage.query.check import FunctionCatalog, engine_checked_statement, load_catalog
from spanscore.storage.query.engine_errors import query_failure
from spanscore.storage.query.guard import QUERY_FORMATS, QueryLimits, dashboard_settings, engine_settings, guard_query
from spanscore.storage.query.readers import ReaderPool, kill_marked, new_mark, refuse_writable_query_user
from spanscore.storage.rows import (
    LOG_COLUMNS,
    join_json_arrays,
    log_columns,
    records_to_json_parts,
)
from spanscore.storage.schema.migrations import migrate
from spanscore.storage.schema.retention import apply_ttls
from spanscore.storage.schema.state import require_current_schema
from spanscore.storage.scored_runs import SCORED_RUN_COLUMNS, ScoredRunRow, scored_run_columns
from spanscore.storage.scores import DECISION_COLUMNS, SCORE_COLUMNS, DecisionRow, ScoreRow, to_columns

log = logging.getLogger(__name__)

# A retried batch carries its batch's token (insert_token), and the deduplication windows (migrations 0006, 0013)
# drop what an earlier try of it stored, in the tables down the view chain too.
_SPAN_INSERT = {"insert_deduplicate": 1, "deduplicate_blocks_in_dependent_materialized_views": 1}

_METRIC_INSERT = {"deduplicate_blocks_in_dependent_materialized_views": 1}
"""A replayed histogram batch is dropped in the GenAI roll-ups too (migration 0016's windows)."""

C = TypeVar("C")
WATCHDOG_GRACE_S = 5.0
"""How long past its time limit a query API query may run before the watchdog kills it and answers its caller."""


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
        query_dsn: str = "",
        query_readers: int = 2,
        query_allow_writable: bool = False,
        migrate_schema: bool = True,
        min_free_disk_bytes: int = 0,
    ) -> None:
        self.migrate_schema = migrate_schema
        # spanscore's own inserts stop below the free-space floor (NOT_ENOUGH_SPACE, retried from the spool)
        # so that merges never meet a full disk; migrations, reads and the query API are not bound by it.
        self._insert_settings: dict[str, Any] = (
            {"min_free_disk_bytes_to_perform_insert": min_free_disk_bytes} if min_free_disk_bytes else {}
        )
        if cluster:
            # A Distributed table answers an insert once the rows are queued on the node that took it; an
            # acknowledged (or unspooled) batch must be on its shards, so the insert waits for them.
            self._insert_settings["distributed_foreground_insert"] = 1
        # spanscore's own reads filter one table by a subquery on another (IN, JOIN); on a cluster both are
        # Distributed, which the engine refuses by default as a double-distributed subquery: run such
        # subqueries once on the node that asks and send their result to the shards (GLOBAL).
        self._own_settings: dict[str, Any] = {"distributed_product_mode": "global"} if cluster else {}
        """Apply migrations on open; when false, only check that someone did (``spanscore migrate``)."""
        self._retention = (spans_ttl_days, scores_ttl_days)
        self.cluster = cluster
        self.dsn = dsn
        self.database = database
        self.limits = limits or QueryLimits()
        self._client: Any = None
        # User queries get their own connections (a failed one must not disturb spanscore's own calls),
        # through query_dsn when set: on a server, a user the engine itself keeps read-only.
        self.query_dsn = query_dsn or dsn
        self._query_readers = query_readers
        self._query_allow_writable = query_allow_writable
        self._readers: ReaderPool | None = None
        self._query_client: Any = None  # the dashboard's own reader
        self._query_lock = threading.Lock()
        self._catalog: FunctionCatalog | None = None
        self._control: Any = None
        self._abandoned: set[str] = set()
        self.watchdog_kills = 0
        """Query API queries the watchdog stopped for running past their limit plus ``WATCHDOG_GRACE_S``."""
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spanscore-insert")
        self._bulk_writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spanscore-insert-bulk")
        self._bulk_client: Any = None
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spanscore-read")
        self._api_readers = ThreadPoolExecutor(max_workers=query_readers, thread_name_prefix="spanscore-query")

    @classmethod
    def from_config(cls, storage: StorageConfig) -> ClickHouseStore:
        """The store the ``storage:`` section describes, not yet opened (the CLI opens one alone)."""
        return cls(
            storage.dsn,
            storage.database,
            spans_ttl_days=storage.spans_ttl_days,
            scores_ttl_days=storage.scores_ttl_days,
            cluster=storage.cluster,
            query_dsn=storage.query_dsn,
            query_readers=storage.query_readers,
            query_allow_writable=storage.query_allow_writable,
            migrate_schema=storage.migrate,
            min_free_disk_bytes=storage.min_free_disk_bytes,
            limits=QueryLimits.from_config(storage),
        )

    # -- lifecycle ------------------------------------------------------------------------------

    def open(self) -> None:
        """Connect and bring the schema up to date (blocking; call before serving)."""
        if self._client is None:
            applied = self.open_schema()
            if not is_embedded(self.query_dsn) and not self._query_allow_writable:
                profile_only = connect(self.query_dsn, self.database)  # the user's own settings, none of ours
                try:
                    refuse_writable_query_user(profile_only, redact(self.query_dsn))
                finally:
                    profile_only.close()
            self._query_client = self._connect_reader(dashboard_settings(self.limits))
            self._readers = ReaderPool(lambda: self._connect_reader(engine_settings(self.limits)), self._query_readers)
            # Cancels abandoned queries; spanscore's own user, which may stop any query.
            self._control = connect(self.dsn, self.database)
            if applied:
                log.info("schema migrated versions=%s dsn=%s", applied, redact(self.dsn))

    def open_schema(self) -> list[int]:
        """Only the owner's connection, with the schema migrated or checked; the versions applied.

        ``spanscore migrate`` stops here: it runs as the owner and never serves queries, so the query
        API's user (``storage.query_dsn``) is not its business.
        """
        self._client = connect(self.dsn, self.database, self._own_settings or None)
        applied: list[int] = []
        if self.migrate_schema:
            applied = migrate(self._client, self.database, cluster=self.cluster)
            apply_ttls(self._client, self.database, *self._retention, cluster=self.cluster)
        else:
            require_current_schema(self._client, self.database)
        # Unqualified names in user queries resolve to spanscore's database.
        self._client.database = self.database
        return applied

    def close(self) -> None:
        self._writer.shutdown(wait=True)
        self._bulk_writer.shutdown(wait=True)
        self._bulk_client = _closed(self._bulk_client)
        self._reader.shutdown(wait=True)
        self._api_readers.shutdown(wait=True)
        self._readers = _closed(self._readers)
        self._control = _closed(self._control)
        self._query_client = _closed(self._query_client)
        self._client = _closed(self._client)

    def _connect_reader(self, settings: dict[str, Any]) -> Any:
        """A connection for reads whose limits and ``readonly`` come with it (see ``guard.engine_settings``)."""
        reader = connect(self.query_dsn, self.database, {**self._own_settings, **settings})  # readonly stays last
        # Unqualified names in user queries resolve to spanscore's database.
        reader.database = self.database
        return reader

    @property
    def client(self) -> Any:
        if self._client is None:
            raise RuntimeError("store is not open")
        return self._client

    # -- writes ---------------------------------------------------------------------------------

    def insert_spans_sync(self, spans: Sequence[SpanRecord], client: Any = None) -> None:
        """Spans go in as JSON rows through ``otel_traces_intake`` (see migration 0005).

        orjson writes the records in C and the engine parses them without holding the GIL, so
        the event loop keeps decoding the next requests meanwhile. Every string is valid UTF-8:
        both decoders refuse unpaired surrogates before a record exists.
        """
        if spans:
            try:
                parts = records_to_json_parts(spans)
            except TypeError as exc:  # a value JSON cannot hold, e.g. an integer past 64 bits
                raise encoding_error("otel_traces_intake", exc) from exc
            self.insert_span_json_sync(parts, client)

    def insert_span_json_sync(self, parts: Sequence[bytes], client: Any = None) -> None:
        """Insert spans already encoded by ``records_to_json``: one insert of one or more such arrays, joined.

        Streaming the parts to the embedded engine's input file instead (a write per part) was tried and not
        kept: 2 of 3 runs at 14,000 LLM-sized spans/s then fell behind and filled the spool, against 0 of 3
        joined (#43, session 27). The suspect: each write gives up the GIL and waits to take it back behind
        the decode and assembly threads.
        """
        body = join_json_arrays(parts)
        self._guarded(
            "otel_traces_intake",
            lambda: (client or self.client).raw_insert(
                f"{self.database}.otel_traces_intake",
                insert_block=body,
                fmt="JSONEachRow",
                settings={**_SPAN_INSERT, **self._insert_settings, **token_settings()},
            ),
        )

    def insert_logs_sync(self, logs: Sequence[LogRecord], client: Any = None) -> None:
        self._insert("otel_logs", LOG_COLUMNS, log_columns(logs), client)

    def insert_metrics_sync(self, points: Sequence[MetricPoint], client: Any = None) -> None:
        """Metric points, each kind into its ``otel_metrics_*`` table (one insert per kind in the batch)."""
        for table, names, columns in metric_columns(points):
            self._insert(table, names, columns, client, _METRIC_INSERT)

    def _insert(
        self,
        table: str,
        columns: Sequence[str],
        data: list[list[Any]],
        client: Any = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        if not data or not data[0]:
            return
        self._guarded(
            table,
            lambda: (client or self.client).insert(
                f"{self.database}.{table}",
                data,
                column_names=list(columns),
                column_oriented=True,
                settings={**(settings or {}), **self._insert_settings, **token_settings()} or None,
            ),
        )

    @staticmethod
    def _guarded(table: str, insert: Callable[[], object]) -> None:
        """Run one insert; a transport failure is retryable, an engine failure as its code says.

        ``InsertDataError`` (see ``insert_errors``) means this block will never be taken: the
        write path splits it instead of retrying it forever.
        """
        try:
            insert()
        except OperationalError as exc:
            raise RetryableError(f"storage unavailable: {exc}", retry_after=2.0) from exc
        except DataError as exc:  # the driver could not serialise a value for its column
            raise encoding_error(table, exc) from exc
        except ClickHouseError as exc:
            raise classify_engine_error(table, exc) from exc
        except (TypeError, ValueError, OverflowError) as exc:  # the driver could not encode a row
            raise encoding_error(table, exc) from exc

    def insert_scores_sync(self, rows: Sequence[ScoreRow]) -> None:
        self._insert("scores", SCORE_COLUMNS, to_columns(rows))

    def insert_decisions_sync(self, rows: Sequence[DecisionRow]) -> None:
        self._insert("score_decisions", DECISION_COLUMNS, to_columns(rows))

    def insert_scored_runs_sync(self, rows: Sequence[ScoredRunRow]) -> None:
        self._insert("scored_runs", SCORED_RUN_COLUMNS, scored_run_columns(rows))

    async def insert_scored_runs(self, rows: Sequence[ScoredRunRow]) -> None:
        await run_with_token(self._writer, self.insert_scored_runs_sync, rows)

    async def insert_scores(self, rows: Sequence[ScoreRow]) -> None:
        await run_with_token(self._writer, self.insert_scores_sync, rows)

    async def insert_decisions(self, rows: Sequence[DecisionRow]) -> None:
        await run_with_token(self._writer, self.insert_decisions_sync, rows)

    async def insert_spans(self, spans: Sequence[SpanRecord]) -> None:
        await run_with_token(self._writer, self.insert_spans_sync, spans)

    async def insert_span_json(self, parts: Sequence[bytes]) -> None:
        await run_with_token(self._writer, self.insert_span_json_sync, parts)

    async def insert_logs(self, logs: Sequence[LogRecord]) -> None:
        await run_with_token(self._writer, self.insert_logs_sync, logs)

    async def insert_metrics(self, points: Sequence[MetricPoint]) -> None:
        await run_with_token(self._writer, self.insert_metrics_sync, points)

    async def insert_metrics_bulk(self, points: Sequence[MetricPoint]) -> None:
        await run_with_token(self._bulk_writer, lambda: self.insert_metrics_sync(points, self._bulk()))

    async def insert_spans_bulk(self, spans: Sequence[SpanRecord]) -> None:
        """Large exports' spans, on a connection and a thread of their own (see ``BatchWriter``'s bulk lane)."""
        await run_with_token(self._bulk_writer, lambda: self.insert_spans_sync(spans, self._bulk()))

    async def insert_logs_bulk(self, logs: Sequence[LogRecord]) -> None:
        await run_with_token(self._bulk_writer, lambda: self.insert_logs_sync(logs, self._bulk()))

    def _bulk(self) -> Any:
        """The bulk lane's connection, made on first use in its own thread."""
        if self._bulk_client is None:
            self.client  # noqa: B018 - raises when the store is not open
            self._bulk_client = connect(self.dsn, self.database, self._own_settings or None)
        return self._bulk_client

    # -- reads ----------------------------------------------------------------------------------

    def query_sync(self, sql: str, fmt: str = "json", mark: str = "") -> bytes:
        """Run an untrusted read query: the engine parses it, the tree is checked, its canonical text runs.

        ``mark`` (from ``readers.new_mark``) names the running query so it can be killed when its caller is gone.
        """
        engine_format = QUERY_FORMATS.get(fmt.lower())
        if engine_format is None:
            raise PermanentError(f"unknown format {fmt!r}; use one of {', '.join(QUERY_FORMATS)}")
        guard_query(sql, self.limits)  # a cheap first filter with clear messages; the engine decides below
        if self._readers is None:
            raise RuntimeError("store is not open")
        with self._readers.use() as reader:
            try:
                statement = engine_checked_statement(reader, sql, self.database, self._functions())
                if mark and mark in self._abandoned:
                    self._abandoned.discard(mark)
                    raise PermanentError("query was cancelled before it started: its client went away")
                result: bytes = reader.raw_query(mark + statement, fmt=engine_format)
            except DatabaseError as exc:
                if is_embedded(self.dsn):
                    discard_partial_output(reader)
                raise query_failure(clean_engine_error(str(exc)), self.limits) from None
            except OperationalError as exc:
                raise RetryableError(f"storage unavailable: {exc}") from exc
            finally:
                self._abandoned.discard(mark)
        return result

    def _functions(self) -> FunctionCatalog:
        """The engine's function names, read once on the control connection (no result caps: ~2,000 rows)."""
        self._catalog = self._catalog or load_catalog(self._control)
        return self._catalog

    async def query(self, sql: str, fmt: str = "json") -> bytes:
        """``query_sync`` on a reader, under a watchdog: killed when its caller goes or its time runs out.

        A query is killed when its caller is cancelled (its client left) or when it outlives its time limit plus
        ``WATCHDOG_GRACE_S``. The engine checks its own time limit between blocks of rows; the watchdog is the
        backstop for work it does not check in time (one costly row), and answers the caller even when the
        engine cannot be stopped.
        """
        mark = new_mark()
        running = asyncio.get_running_loop().run_in_executor(self._api_readers, self.query_sync, sql, fmt, mark)
        deadline_s = self.limits.max_execution_time_s + WATCHDOG_GRACE_S
        try:
            return await asyncio.wait_for(asyncio.shield(running), deadline_s)
        except TimeoutError:
            self.watchdog_kills += 1
            log.warning("query watchdog: a query API query ran past %g s and was killed mark=%s", deadline_s, mark)
            await self._stop(running, mark)
            raise PermanentError(
                f"query did not finish within {deadline_s:g} s (storage.query_max_execution_time_s plus a grace of "
                f"{WATCHDOG_GRACE_S:g} s, waiting for a free reader included) and was stopped; narrow the time "
                "range, read a roll-up view, or retry when fewer queries run"
            ) from None
        except asyncio.CancelledError:
            await self._stop(running, mark)
            raise

    async def _stop(self, running: asyncio.Future[bytes], mark: str) -> None:
        if not running.done():
            self._abandoned.add(mark)
        running.cancel()  # a query still waiting for a reader never starts
        await asyncio.to_thread(kill_marked, self._control, mark)

    def read_sync(self, sql: str, parameters: dict[str, Any]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        """Fixed SQL with bound parameters, run like a user query (the dashboard's reads).

        Read-only with the time and memory limits of ``query_sync`` (``dashboard_settings``, set on the
        connection), on a reader connection kept for the dashboard (API queries cannot take it): a read
        cut by a limit leaves no partial output on spanscore's own connection.
        """
        if self._query_client is None:
            raise RuntimeError("store is not open")
        with self._query_lock:
            try:
                result = self._query_client.query(sql, parameters=parameters)
            except DatabaseError as exc:
                if is_embedded(self.dsn):
                    discard_partial_output(self._query_client)
                raise query_failure(clean_engine_error(str(exc)), self.limits) from None
            except OperationalError as exc:
                raise RetryableError(f"storage unavailable: {exc}") from exc
        return tuple(result.column_names), list(result.result_rows)

    async def read(self, sql: str, parameters: dict[str, Any]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        return await asyncio.get_running_loop().run_in_executor(self._reader, self.read_sync, sql, parameters)

    def internal_query(self, sql: str, parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Trusted SQL written by spanscore itself; values always travel as bound parameters."""
        return list(self.client.query(sql, parameters=parameters).result_rows)


def _closed(connection: C | None) -> C | None:
    """Close ``connection`` if there is one; returns None, for the attribute that held it."""
    if connection is not None:
        connection.close()  # type: ignore[attr-defined]
    return None
