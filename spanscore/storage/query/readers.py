"""A small pool of reader connections for untrusted queries, and cancelling one by its mark.

Each reader is its own engine connection used by one thread at a time, so a slow query holds
one reader, not the query API. A query carries a mark (a leading comment with a random id) that
the engine keeps in ``system.processes``; ``KILL QUERY`` on the control connection stops it when
its HTTP client goes away. The mark works the same in chDB (which does not honour a caller's
``query_id``) and on a server.
"""

from __future__ import annotations

import logging
import queue
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from clickhouse_connect.driver.exceptions import ClickHouseError

from spanscore.errors import ConfigError

log = logging.getLogger(__name__)
T = TypeVar("T")
_MARK = "spanscore-query:"


def new_mark() -> str:
    """A comment that names one query, put in front of the statement the engine runs."""
    return f"/* {_MARK}{uuid.uuid4().hex} */ "


class ReaderPool:
    """``size`` connections made by ``connect``; ``use`` lends one to the calling thread."""

    def __init__(self, connect: Callable[[], Any], size: int) -> None:
        self._idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._all = [connect() for _ in range(size)]
        for client in self._all:
            self._idle.put(client)

    @contextmanager
    def use(self) -> Iterator[Any]:
        client = self._idle.get()
        try:
            yield client
        finally:
            self._idle.put(client)

    def close(self) -> None:
        for client in self._all:
            client.close()
        self._all = []


def kill_marked(control: Any, mark: str) -> None:
    """Stop the running query that carries ``mark`` and wait until it has stopped (no-op if it already ended)."""
    query_id = mark.removeprefix("/* ").removesuffix(" */ ")
    if not query_id.startswith(_MARK) or not query_id[len(_MARK) :].isalnum():
        raise ValueError(f"not a query mark: {mark!r}")
    try:
        control.command(f"KILL QUERY WHERE startsWith(query, '/* {query_id} */') SYNC")
    except ClickHouseError as exc:
        log.warning("could not cancel an abandoned query mark=%s error=%s", query_id, exc)


def refuse_writable_query_user(reader: Any, dsn: str) -> None:
    """Raise ConfigError when a server's query user is not read-only by its own profile.

    The engine's ``readonly`` setting, as the user's settings profile sets it, is what keeps a
    server user from writing whatever text it runs; spanscore's parse check is a second line.
    """
    readonly = int(reader.query("SELECT toUInt8(getSetting('readonly'))").result_rows[0][0])
    if readonly == 0:
        raise ConfigError(
            f"storage: the query API's ClickHouse user ({dsn}) can write: set storage.query_dsn to a read-only "
            "user (deploy/clickhouse/query-user.sql), or set storage.query_allow_writable: true to accept the risk"
        )
