"""Connections to the engine: embedded (chDB) or a server, and the small helpers every connection needs."""

from __future__ import annotations

import logging
import os
from typing import Any
from urllib.parse import urlparse

import clickhouse_connect
from clickhouse_connect.driver.exceptions import ClickHouseError

from spanscore.storage.dsn import redact, scrub

__all__ = ["clean_engine_error", "connect", "discard_partial_output", "is_embedded", "redact", "scrub"]

log = logging.getLogger(__name__)


def is_embedded(dsn: str) -> bool:
    return dsn.startswith("chdb:")


def connect(dsn: str, database: str, settings: dict[str, Any] | None = None) -> Any:
    """Open a clickhouse-connect client for ``dsn``; the embedded path is created if needed.

    ``settings`` bind every statement the client runs: on the embedded engine its session's
    (``SET``, in order, so a final ``readonly=1`` locks them), on a server every request's.
    """
    if is_embedded(dsn):
        path = urlparse(dsn).path
        if path and path.startswith("/"):
            os.makedirs(path, exist_ok=True)
        return clickhouse_connect.get_client(dsn=dsn, settings=settings)
    # Servers: the database may not exist before the first migration, so connect to default.
    # clickhouse-connect picks TLS from the port (443, 8443) and ignores the scheme: an https:// DSN on
    # another port would send the password in plain HTTP. The scheme decides here.
    secure = urlparse(dsn).scheme in ("https", "clickhouses")
    return clickhouse_connect.get_client(
        dsn=dsn,
        database="default",
        autogenerate_session_id=False,
        settings=settings,
        secure=secure,
        interface="https" if secure else None,
    )


def discard_partial_output(client: Any) -> None:
    """Take what a failed query left on an embedded connection.

    chDB (4.4) keeps the output a query wrote before it failed (a time limit, the row cap)
    on its connection and prepends it to the next query's result, which would hand one
    caller's partial rows to the next. One throwaway query takes that output.
    """
    try:
        client.raw_query("SELECT 1 WHERE 0", fmt="TabSeparated")
    except ClickHouseError as exc:
        log.warning("could not clear a failed query's output error=%s", exc)


def clean_engine_error(message: str) -> str:
    """Keep the engine's one-line reason, not the driver's stack of wrappers."""
    for line in message.splitlines():
        if "DB::Exception" in line or line.startswith("Code:"):
            return line.strip()
    return message.strip().splitlines()[0] if message.strip() else "query failed"
