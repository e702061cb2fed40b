"""Which fleet replicas /readyz keeps in rotation (#36, after a review of the shipped readiness probe).

A replica cut from Keeper alone leaves the rotation, so its peers take the spans; a fleet that lost Keeper
everywhere stays in rotation, so ingest (which needs no Keeper) goes on; a replica that never became a member
(its name taken) is out while the holder of the name is in. Real services over one embedded store, a real
ZooKeeper, each replica reaching it through its own cuttable relay.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from spanscore.cli.status_text import format_status
from spanscore.fleet.config import FleetConfig
from spanscore.server.service import Service
from tests.e2e.test_fleet import configure, until
from tests.e2e.test_fleet_degraded import get_json
from tests.e2e.test_targets import SESSION_RULE
from tests.service_setup import make_service_config, new_database_name
from tests.tcp_proxy import PartitionProxy
from tests.zookeeper import ZooKeeperServer

Relayed = Callable[[str], "Any"]


@pytest.fixture
async def relayed(chdb_dsn: str, zookeeper: ZooKeeperServer, tmp_path: Path) -> AsyncIterator[Any]:
    """``start(name)`` -> (service, relay): one replica of a fleet over one store, behind its own Keeper relay."""
    database, hosts = new_database_name(), zookeeper.chroot()
    chroot = hosts.removeprefix(zookeeper.hosts)
    started: list[tuple[Service, PartitionProxy]] = []

    async def start(name: str) -> tuple[Service, PartitionProxy]:
        proxy = PartitionProxy(zookeeper.host, zookeeper.port)
        config = make_service_config(chdb_dsn, database, tmp_path / f"{name}-{len(started)}")
        configure(config, [SESSION_RULE], 1.0)
        config.fleet = FleetConfig(keeper=proxy.address + chroot, replica=name, session_timeout_s=2.0)
        service = Service(config)
        await service.start()
        started.append((service, proxy))
        return service, proxy

    yield start
    for service, proxy in started:
        proxy.heal()
        await service.shutdown()
        proxy.close()


async def ready(service: Service) -> tuple[int, dict[str, Any]]:
    status, body = await get_json(service, "/readyz")
    assert isinstance(body, dict), body
    return status, body


async def test_a_replica_cut_alone_leaves_the_rotation_a_fleet_without_keeper_stays_in_it(relayed: Any) -> None:
    (first, first_relay), (second, second_relay) = await relayed("r0"), await relayed("r1")
    assert first.fleet is not None and second.fleet is not None
    for replica in (first.fleet, second.fleet):
        await until(lambda replica=replica: _true(replica.fleet.joined), timeout_s=20)
    await until(lambda: _true(second.fleet.presence.peers_with_keeper() == ["r0"]), timeout_s=20)
    assert await ready(second) == (200, {"ready": True})

    second_relay.cut()  # alone: its peer still has Keeper and takes the spans

    async def out_of_rotation() -> bool:
        status, body = await ready(second)
        return status == 503 and body["degraded"].startswith("degraded: Keeper unreachable")

    await until(out_of_rotation, timeout_s=20)
    _, body = await ready(second)
    assert any(line.startswith("out of rotation: 1 other replica(s) have Keeper (r0)") for line in body["off"]), body
    assert await ready(first) == (200, {"ready": True})
    assert "out of rotation" in format_status(second.metrics(), "http://x")
    status, health = await get_json(second, "/healthz")
    assert status == 200 and health["status"] == "degraded", health

    first_relay.cut()  # now Keeper is gone for the whole fleet: both stay in rotation, saying degraded

    async def both_in_rotation_degraded() -> bool:
        answers = [await ready(first), await ready(second)]
        return all(status == 200 and body.get("degraded", "").startswith("degraded:") for status, body in answers)

    await until(both_in_rotation_degraded, timeout_s=20)
    for replica in (first, second):
        _, body = await ready(replica)
        assert body["ready"] is True and any(line.startswith("in rotation: ") for line in body["off"]), body
        assert "in rotation (no other replica" in format_status(replica.metrics(), "http://x")

    first_relay.heal()
    second_relay.heal()

    async def both_members_again() -> bool:
        return [await ready(first), await ready(second)] == [(200, {"ready": True})] * 2

    await until(both_members_again, timeout_s=30)


async def test_a_replica_refused_for_its_name_is_out_of_rotation_while_the_holder_is_in(relayed: Any) -> None:
    holder, _ = await relayed("same")
    assert holder.fleet is not None
    await until(lambda: _true(holder.fleet.fleet.joined), timeout_s=20)
    second, _ = await relayed("same")
    assert second.fleet is not None

    async def refused_and_out() -> bool:
        status, body = await ready(second)
        return status == 503 and "is already a live member" in body.get("degraded", "")

    await until(refused_and_out, timeout_s=30)  # out of rotation already while it waits for the name
    _, body = await ready(second)
    assert body["degraded"].startswith("degraded: not a member of the fleet: fleet.replica 'same'"), body
    assert "out of rotation: 1 other replica(s) have Keeper (same)" in body["off"], body
    assert await ready(holder) == (200, {"ready": True})
    assert "not a member of the fleet" in format_status(second.metrics(), "http://x")


async def _true(value: bool) -> bool:
    return value
