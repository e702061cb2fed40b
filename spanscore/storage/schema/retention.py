"""Retention: table TTLs for spans and scores, set from configuration at start-up.

Spans (``otel_traces``, its trace-id lookup, ``otel_logs``) and scores (``scores``,
``score_decisions``) each get one retention in days; 0 keeps them forever. The
roll-ups (``scores_1m``, ``scores_1h``) are small and keep their history, so the
trend outlives the raw rows. TTLs are table metadata, not a migration: a changed
setting takes effect at the next start. A statement is issued only when the stored
TTL differs from the wanted one, because ``MODIFY TTL`` makes the server re-check
every existing part. Span tables drop whole daily partitions (``ttl_only_drop_parts``);
score tables are monthly, so expired score rows go in merges.
"""

from __future__ import annotations

import logging
import re
from typing import Protocol

log = logging.getLogger(__name__)

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

SPAN_TABLES: tuple[tuple[str, str], ...] = (
    ("otel_traces", "toDateTime(Timestamp)"),
    ("otel_traces_trace_id_ts", "Start"),
    ("otel_logs", "TimestampTime"),
    ("otel_metrics_sum", "toDateTime(TimeUnix)"),
    ("otel_metrics_gauge", "toDateTime(TimeUnix)"),
    ("otel_metrics_histogram", "toDateTime(TimeUnix)"),
    ("otel_metrics_exponential_histogram", "toDateTime(TimeUnix)"),
    ("otel_metrics_summary", "toDateTime(TimeUnix)"),
)
"""Tables holding spans, log records and metric points, each with the time its TTL counts from."""

SCORE_TABLES: tuple[tuple[str, str], ...] = (
    ("scores", "toDateTime(RunTimestamp)"),
    ("score_decisions", "toDateTime(RunTimestamp)"),
    ("scored_runs", "toDateTime(RunTimestamp)"),
)
"""Tables holding scores, sampling decisions and the scored runs' text; all count from the run's time."""


class CommandRunner(Protocol):
    def command(self, sql: str) -> object: ...


def ttl_statements(database: str, spans_days: int, scores_days: int, *, cluster: str | None = None) -> list[str]:
    """The ALTER statements that set both retentions, whatever the tables hold now."""
    _check(database, spans_days, scores_days, cluster)
    statements: list[str] = []
    for tables, days in ((SPAN_TABLES, spans_days), (SCORE_TABLES, scores_days)):
        for table, column in tables:
            statements.append(_alter(database, table, column, days, cluster))
    return statements


def apply_ttls(
    client: CommandRunner, database: str, spans_days: int, scores_days: int, *, cluster: str | None = None
) -> list[str]:
    """Bring each table's TTL to the configured retention; return the statements issued.

    Tables already at the wanted TTL are left alone, so calling this on every start
    costs a metadata read. With ``cluster`` the ALTERs go ``ON CLUSTER`` to the
    ``<table>_local`` tables that hold the rows (see ``spanscore.storage.schema.cluster``).
    """
    _check(database, spans_days, scores_days, cluster)
    issued: list[str] = []
    for tables, days in ((SPAN_TABLES, spans_days), (SCORE_TABLES, scores_days)):
        for table, column in tables:
            target = f"{table}_local" if cluster else table
            current = _current_ttl(client, database, target)
            wanted = f"{column} + toIntervalDay({days})" if days else ""
            if _normalise(current) == _normalise(wanted):
                continue
            if not current and not days:
                continue
            statement = _alter(database, table, column, days, cluster)
            log.info("setting retention table=%s days=%d", target, days)
            client.command(statement)
            issued.append(statement)
    return issued


def _alter(database: str, table: str, column: str, days: int, cluster: str | None) -> str:
    target = f"{database}.{table}_local ON CLUSTER {cluster}" if cluster else f"{database}.{table}"
    if days:
        return f"ALTER TABLE {target} MODIFY TTL {column} + INTERVAL {days} DAY"
    return f"ALTER TABLE {target} REMOVE TTL"


def _current_ttl(client: CommandRunner, database: str, table: str) -> str:
    """The table-level TTL expression as the server prints it, or '' when there is none."""
    engine = str(
        client.command(f"SELECT engine_full FROM system.tables WHERE database = '{database}' AND name = '{table}'")
    )
    match = re.search(r"\bTTL (.+?)(?: SETTINGS |$)", engine)
    return match.group(1).strip() if match else ""


def _normalise(expression: str) -> str:
    return re.sub(r"\s+", "", expression)


def _check(database: str, spans_days: int, scores_days: int, cluster: str | None) -> None:
    if not _IDENTIFIER.match(database):
        raise ValueError(f"storage.database must be a plain identifier, got {database!r}")
    if cluster is not None and not _IDENTIFIER.match(cluster):
        raise ValueError(f"storage cluster name must be a plain identifier, got {cluster!r}")
    for key, days in (("storage.spans_ttl_days", spans_days), ("storage.scores_ttl_days", scores_days)):
        if isinstance(days, bool) or not isinstance(days, int) or days < 0:
            raise ValueError(f"{key} must be a whole number of days, 0 to keep forever, got {days!r}")
