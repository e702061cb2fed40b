"""A fleet replica's heartbeats: a store that hangs is reported like one that fails (/healthz, status).

The store here is a stand-in whose insert fails or blocks on demand: what is tested is how long the presence
waits before it says so, not ClickHouse (tests/e2e/test_fleet_rotation.py has real services and ZooKeeper).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from spanscore.fleet.config import FleetConfig
from spanscore.server.fleet_presence import WINDOW_BEATS, FleetPresence


class _Fleet:
    replica, joined = "r0", True
    config = FleetConfig(keeper="127.0.0.1:2181", replica="r0")


class _Client:
    def __init__(self) -> None:
        self.mode = "ok"
        self.release = threading.Event()

    def insert(self, *args: Any, **kwargs: Any) -> None:
        if self.mode == "fail":
            raise ConnectionRefusedError("connection refused")
        if self.mode == "hang":
            self.release.wait(10)


class _Store:
    database = "db"

    def __init__(self) -> None:
        self.client = _Client()

    def internal_query(self, sql: str, parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return [] if "groupUniqArray" in sql else [("r1",)]  # no other fleet; r1 has Keeper


def _presence(interval_s: float = 0.05) -> tuple[FleetPresence, _Store]:
    store = _Store()
    return FleetPresence(_Fleet(), store, interval_s), store  # type: ignore[arg-type]


def test_a_store_that_refuses_is_reported_after_three_beats_and_cleared_by_the_next_answer() -> None:
    presence, store = _presence()
    presence.once()
    assert presence.peers_with_keeper() == ["r1"] and presence.store_problem() is None
    store.client.mode = "fail"
    presence.once()
    assert presence.store_problem() is None  # one failed beat proves nothing
    time.sleep(WINDOW_BEATS * presence.interval_s + 0.05)
    presence.once()
    problem = presence.store_problem()
    assert problem is not None and "failing for" in problem and "ConnectionRefusedError" in problem, problem
    assert presence.peers_with_keeper() is None  # too old to say who has Keeper
    store.client.mode = "ok"
    presence.once()
    assert presence.store_problem() is None and presence.peers_with_keeper() == ["r1"]


def test_a_store_that_hangs_is_reported_while_the_heartbeat_still_waits() -> None:
    presence, store = _presence()
    store.client.mode = "hang"
    worker = threading.Thread(target=presence.once)
    worker.start()
    try:
        time.sleep(WINDOW_BEATS * presence.interval_s + 0.1)
        problem = presence.store_problem()
        assert problem is not None and "waited" in problem and "for the store to answer" in problem, problem
    finally:
        store.client.release.set()
        worker.join(5)
    assert presence.store_problem() is None
