"""A replica whose Keeper session was restarted during a partition still shuts down cleanly (#36).

Seen by the k8s helper: after a cut longer than 1.5 session timeouts the coordinator starts a new Keeper
session (``_restart_if_stuck``); a SIGTERM then, still cut or healed, raised kazoo's "Cannot close connection
until it is stopped" out of ``Fleet.stop()``, so the service's shutdown skipped what follows the fleet's
leave (the ingest workers and the store were never closed). Leaving the fleet must never stop a shutdown:
a Keeper client that does not close in time is logged, and its session ends by timeout.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from spanscore.fleet.config import FleetConfig
from spanscore.server.service import Service
from tests.e2e.test_fleet import configure, until
from tests.service_setup import make_service_config, new_database_name
from tests.tcp_proxy import PartitionProxy
from tests.zookeeper import ZooKeeperServer

SESSION_TIMEOUT_S = 2.0
RESTARTED = "starting a new session"


@pytest.mark.parametrize("healed", [False, True])
async def test_a_replica_restarted_mid_partition_shuts_down_and_closes_its_store(
    chdb_dsn: str, tmp_path: Path, zookeeper: ZooKeeperServer, caplog: pytest.LogCaptureFixture, healed: bool
) -> None:
    caplog.set_level(logging.WARNING, logger="spanscore.fleet.coordinator")
    proxy = PartitionProxy(zookeeper.host, zookeeper.port)
    try:
        config = make_service_config(chdb_dsn, new_database_name(), tmp_path / "replica")
        configure(config, [], 1.0)
        keeper = proxy.address + zookeeper.chroot().removeprefix(zookeeper.hosts)
        config.fleet = FleetConfig(keeper=keeper, replica="cut", session_timeout_s=SESSION_TIMEOUT_S)
        service = Service(config)
        await service.start()
        stopped = False
        try:
            assert service.fleet is not None
            assert await asyncio.to_thread(service.fleet.fleet.wait_joined, 20)
            proxy.cut()

            async def restarted() -> bool:
                return any(RESTARTED in record.getMessage() for record in caplog.records)

            await until(restarted, timeout_s=30)
            await asyncio.sleep(1.0)  # the new session's first connection attempts go into the silence
            if healed:
                proxy.heal()
            await service.shutdown()  # must not raise
            stopped = True
            assert service.fleet.fleet.state == "stopped"
            assert service._stopped.is_set()  # everything after the fleet's leave ran: workers, store
        finally:
            if not stopped:
                proxy.heal()
                await service.shutdown()
    finally:
        proxy.close()
