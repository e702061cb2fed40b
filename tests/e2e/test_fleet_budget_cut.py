"""A replica cut from Keeper goes on the budgets' local share once its session may be gone, not later (#36).

Observed: with ``session_timeout_s: 4`` the local share began about 7 s after Keeper went away. The member
loop counted the cut from the last round that found the Keeper client connected, but through a partition the
client says so until its read timeout (two thirds of the session timeout), and a round waiting on a Keeper
call sent into the silence sees nothing at all meanwhile. The state is read at one point in time: the
session timeout after the cut plus a margin for one tick and the store read that sizes the share. A real
``Service``, a real ZooKeeper reached through a relay the test cuts (silence), or killed (kill -9).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from spanscore.fleet.config import FleetConfig
from spanscore.server.service import Service
from tests.e2e.test_fleet import configure, until
from tests.service_setup import make_service_config, new_database_name
from tests.tcp_proxy import PartitionProxy
from tests.zookeeper import ZooKeeperServer, missing_reason, start_zookeeper

SESSION_TIMEOUT_S = 4.0
MARGIN_S = 1.5
"""One tick of the budget state (0.25 s at most) and the store read of the day's spend, with room for load."""

JUDGED = {"name": "judged", "target": "run", "scorers": ["completeness"], "budget": {"daily_usd": 8.0}}


async def test_a_replica_cut_by_a_partition_is_on_the_local_share_by_the_session_timeout(
    chdb_dsn: str, tmp_path: Path, zookeeper: ZooKeeperServer
) -> None:
    """Silence: kazoo notices only at its read timeout, and a lease check sent meanwhile waits for that."""
    proxy = PartitionProxy(zookeeper.host, zookeeper.port)
    try:
        keeper = proxy.address + zookeeper.chroot().removeprefix(zookeeper.hosts)
        await _on_the_local_share_after_a_cut(chdb_dsn, tmp_path, keeper, proxy.cut, proxy.heal)
    finally:
        proxy.close()


async def test_a_replica_whose_keeper_was_killed_is_on_the_local_share_by_the_session_timeout(
    chdb_dsn: str, tmp_path: Path
) -> None:
    """Keeper killed (kill -9): connections drop at once, and every reconnection is refused."""
    if missing_reason() is not None:
        pytest.skip(f"fleet test needs ZooKeeper: {missing_reason()}")
    server = start_zookeeper(tmp_path / "zookeeper")
    try:
        await _on_the_local_share_after_a_cut(chdb_dsn, tmp_path, server.hosts, server.process.kill, lambda: None)
    finally:
        server.stop()


async def _on_the_local_share_after_a_cut(
    chdb_dsn: str, tmp_path: Path, keeper: str, cut: Callable[[], None], heal: Callable[[], None]
) -> None:
    """Join, lease, cut; then, the session timeout and a margin later, the replica is on the local share."""
    config = make_service_config(chdb_dsn, new_database_name(), tmp_path / "replica")
    configure(config, [JUDGED], 1.0)
    config.fleet = FleetConfig(keeper=keeper, replica="cut", session_timeout_s=SESSION_TIMEOUT_S, expected_replicas=2)
    service = Service(config)
    await service.start()
    try:
        assert service.fleet is not None
        fleet = service.fleet.fleet
        assert await asyncio.to_thread(fleet.wait_joined, 20)
        assert await asyncio.to_thread(fleet.fence.wait_live, 20)

        async def leased() -> bool:
            return service.metrics().get("fleet_budget_leases_taken", 0) >= 1

        await until(leased, timeout_s=20)
        assert service.metrics()["fleet_budget_local_share"] == 0.0
        cut()
        await asyncio.sleep(SESSION_TIMEOUT_S + MARGIN_S)
        state = service.metrics()
        fleet_state = {k: v for k, v in state.items() if k.startswith("fleet_")}
        assert state["fleet_budget_local_share"] == 1.0, fleet_state
        assert state["fleet_keeper_connected"] == 0.0, fleet_state  # and it says it is degraded (/readyz, status)
    finally:
        heal()  # a Keeper client stopped while its connection is silent refuses to close
        await service.shutdown()
