"""Whether a replica without Keeper should leave the load balancer's rotation: asked of the shared store.

``/readyz`` is the manifests' readiness probe. A replica cut from Keeper alone (a partition, a wrong
``fleet.keeper``, a name another process holds) should leave the rotation: its peers have Keeper and take the
spans. But when Keeper is down for the whole fleet, every replica is cut; if all left, the Collector would have
nowhere to send and ingest, which needs no Keeper, would stop. A replica cannot ask Keeper who else lost it,
so each writes a heartbeat row into the shared store every ``interval`` (``storage.fleet_heartbeats``) and,
when it lacks Keeper, reads whether another process reported "joined" lately: out of rotation if so, in
rotation (still saying "degraded") if not, or if the store did not answer either.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from spanscore.fleet.coordinator import Fleet
from spanscore.storage.fleet_heartbeats import beat, joined_peers, other_fleets
from spanscore.storage.fleet_records import Store

log = logging.getLogger(__name__)

WINDOW_BEATS = 3
"""A peer counts as having Keeper when it said so within this many intervals (a missed beat is no proof)."""


class FleetPresence:
    def __init__(self, fleet: Fleet, store: Store, interval_s: float) -> None:
        self.fleet = fleet
        self.store = store
        self.interval_s = interval_s
        self.instance = uuid.uuid4().hex
        """This process, told apart from another given the same replica name."""
        self.peers: list[str] = []
        self.others: dict[str, list[str]] = {}
        """Other fleets (Keeper path -> replicas) whose replicas beat into this database lately: a misconfiguration."""
        self._read_at: float | None = None
        self.failing_since: float | None = None
        self.failure = ""
        self._asking_since: float | None = None
        """When the heartbeat now waiting for the store was sent (a hung store never fails, it only waits)."""
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="fleet-presence")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _loop(self) -> None:
        while True:
            await asyncio.to_thread(self.once)
            await asyncio.sleep(self.interval_s)

    def once(self) -> None:
        """Write this process's heartbeat, then read which other processes have Keeper (blocking)."""
        self._asking_since = time.monotonic()
        try:
            path = self.fleet.config.keeper_path()
            beat(self.store, self.fleet.replica, self.instance, joined=self.fleet.joined, fleet=path)
            self.peers = joined_peers(self.store, self.instance, WINDOW_BEATS * self.interval_s)
            others = other_fleets(self.store, path, WINDOW_BEATS * self.interval_s)
        except Exception as exc:
            if self.failing_since is None:
                self.failing_since = time.monotonic()
                log.warning("fleet: heartbeat to the store failed: %s", _cause(exc))
            self.failure = _cause(exc)
            return
        finally:
            self._asking_since = None
        if others and others != self.others:
            log.error("fleet: %s", shared_store(others))
        self.others = others
        if self.failing_since is not None:
            log.info("fleet: heartbeats reach the store again")
        self._read_at, self.failing_since, self.failure = time.monotonic(), None, ""

    def peers_with_keeper(self) -> list[str] | None:
        """Other replicas that lately said they have Keeper; None when the store has not told us lately."""
        if self._read_at is None or time.monotonic() - self._read_at > WINDOW_BEATS * self.interval_s:
            return None
        return self.peers

    def store_problem(self) -> str | None:
        """Why heartbeats have not reached the store for more than a window (failing or unanswered), or None."""
        now, window = time.monotonic(), WINDOW_BEATS * self.interval_s
        asking = self._asking_since
        if asking is not None and now - asking > window:
            return f"store: a fleet heartbeat has waited {now - asking:.0f} s for the store to answer"
        if self.failing_since is None or now - self.failing_since <= window:
            return None
        return f"store: fleet heartbeats failing for {now - self.failing_since:.0f} s ({self.failure})"


def shared_store(others: dict[str, list[str]]) -> str:
    """What is wrong when other fleets write this replica's database, and what to do."""
    listed = "; ".join(f"{path} ({', '.join(names)})" for path, names in others.items())
    return (
        f"another fleet writes to this database: {listed}. Fleets sharing a database share rule sets, scorings "
        "and budgets; give each fleet its own storage database (and its own fleet.path)"
    )


def _cause(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__
