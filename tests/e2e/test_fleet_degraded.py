"""A fleet when Keeper misbehaves (#36 items 1, 4, 5, 6, 8, 13; #37 item 12): real services, a real ZooKeeper.

The replicas are whole ``Service`` objects over one store, as in test_fleet.py; Keeper faults are made on the
real server: a node written by hand, a session closed from outside, the server restarted with its data wiped.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from spanscore.cli.status_text import format_status
from spanscore.fleet.config import FleetConfig
from spanscore.fleet.leases import budget_node
from spanscore.sampling.budget import DailyBudget
from spanscore.server.service import Service
from tests.e2e import test_fleet
from tests.e2e.alert_parts import Receiver
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_fleet import MakeFleet, configure, until
from tests.e2e.test_live_scoring import agent_traces
from tests.e2e.test_targets import SESSION_RULE
from tests.fakes.fake_openai import FakeJudgeServer, Reply
from tests.ports import free_port
from tests.service_setup import make_service_config, new_database_name
from tests.tcp_proxy import PartitionProxy
from tests.zookeeper import ZooKeeperServer, restart_wiped, start_zookeeper

make_fleet = test_fleet.make_fleet  # the fixture: N replicas over one store and one ZooKeeper chroot

MALFORMED = [b"[1, 2]", b'{"rules": 5}', b"[" * 5000 + b"]" * 5000, b"not json {"]


async def get_json(service: Service, path: str) -> tuple[int, Any]:
    status, text = await get_text(service, path)
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text  # an error page: the status says what went wrong


async def get_text(service: Service, path: str) -> tuple[int, str]:
    assert service.api is not None
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{service.api.port}{path}") as response:
            return response.status, await response.text()


async def test_a_malformed_rules_node_is_refused_counted_and_shown_never_a_500(make_fleet: MakeFleet) -> None:
    [replica] = await make_fleet(1, [SESSION_RULE])
    assert replica.fleet is not None
    fleet = replica.fleet.fleet
    running = replica.rule_control.rule_set.version
    await until(lambda: _published(replica))
    for number, data in enumerate(MALFORMED, start=1):
        stat = await asyncio.to_thread(fleet.client.set, fleet.node("rules"), data)
        answers: list[tuple[int, Any]] = []

        async def answered(version: int = stat.version, answers: list[tuple[int, Any]] = answers) -> bool:
            answers.append(await get_json(replica, "/api/v1/rules"))
            status, body = answers[-1]
            return status != 200 or body["fleet"]["version"] == version

        await until(answered, timeout_s=10)
        status, body = answers[-1]
        assert status == 200, body
        assert body["version"] == running  # the running rules stay
        assert "refused here" in body["fleet"]["error"], body
        assert replica.metrics()["fleet_rules_malformed"] == number
    status, text = await get_text(replica, "/metrics")
    assert status == 200 and "spanscore_fleet_rules_malformed_total 4.0" in text


async def _published(replica: Service) -> bool:
    assert replica.fleet is not None
    return replica.fleet.rules.fleet_version >= 0


BUDGET_RULE = {"name": "judged", "target": "run", "scorers": ["completeness"], "budget": {"daily_usd": 8.0}}


async def test_without_keeper_a_replica_says_it_is_degraded_and_scores_on_the_local_share(
    chdb_dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """#36 items 1 and 6: a wrong fleet.keeper is visible in /readyz, /healthz and status; budgets go on, 1/E each.

    Alone (no replica has Keeper) it stays in rotation: test_fleet_rotation has the replica cut alone.
    """
    config = make_service_config(chdb_dsn, new_database_name(), tmp_path)
    judged = {"name": "judged", "scorers": ["toxicity"], "budget": {"daily_tokens": 8_000_000}}
    configure(config, [judged], 1.0)
    config.fleet = FleetConfig(
        keeper=f"127.0.0.1:{free_port()}", replica="alone", session_timeout_s=2.0, expected_replicas=4
    )
    judge = FakeJudgeServer(default_reply=Reply.json({"verdicts": [{"verdict": "no", "reason": "polite"}]}))
    await judge.start()
    config.judge = {"model": "openai/judge", "api_base": judge.base_url, "timeout_s": 5}
    service = Service(config)
    await service.start()
    try:
        assert service.live is not None
        budget = service.live.engine.budget("judged")
        assert budget is not None

        async def local() -> bool:
            return service.metrics().get("fleet_budget_local_share") == 1.0

        await until(local, timeout_s=15)
        assert service.grpc is not None
        for count in (1, 3):  # one first: until a run's cost is known, a budget lets one run in flight
            traces = agent_traces(count)
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), traces) == "SUCCESS"

            async def judged_all(expected: int = len(judge.requests) + count) -> bool:
                return len(judge.requests) >= expected

            await until(judged_all, timeout_s=20)  # always-sampled judged runs are judged, Keeper or not
        assert budget.leased == pytest.approx(2_000_000)  # 8M tokens / 4: the local share
        status, ready = await get_json(service, "/readyz")  # no other replica has Keeper: it stays in rotation
        assert status == 200 and ready["degraded"].startswith("degraded: Keeper unreachable"), ready
        assert "in rotation: no other replica reported Keeper to the store lately" in ready["off"][-1], ready
        assert any("local share" in line for line in ready["off"]) and any("rules frozen" in x for x in ready["off"])
        status, health = await get_json(service, "/healthz")
        assert status == 200 and health["status"] == "degraded" and "Keeper unreachable" in health["degraded"]
        text = format_status(service.metrics(), "http://x")
        assert "degraded: Keeper unreachable" in text and "budgets on the local share" in text
    finally:
        await service.shutdown()
        await judge.stop()
    assert "budgets on the local share" in caplog.text


async def test_a_replica_with_keeper_is_ready_and_leases_a_slice_not_the_whole_limit(make_fleet: MakeFleet) -> None:
    """#36 item 1: alone in its fleet at first, a replica still leases a slice; stopped, it gives it back."""
    first, second = await make_fleet(2, [BUDGET_RULE], expected_replicas=2)
    for replica in (first, second):
        assert replica.live is not None
        budget = replica.live.engine.budget("judged")
        assert budget is not None

        async def leased(budget: DailyBudget = budget) -> bool:
            return (budget.leased or 0.0) > 0

        await until(leased, timeout_s=10)
        assert budget.leased is not None and budget.leased <= 8.0 / 2  # slices: never the whole limit
        status, ready = await get_json(replica, "/readyz")
        assert status == 200 and ready == {"ready": True}
    assert first.fleet is not None and second.fleet is not None
    node = first.fleet.fleet.node(budget_node("judged"))
    await first.shutdown()  # a clean stop returns its lease
    data, _ = await asyncio.to_thread(second.fleet.fleet.client.get, node)
    assert list(json.loads(data)["holders"]) == ["r1"]


async def test_a_rule_put_during_a_partition_is_503_with_retry_after(
    chdb_dsn: str, tmp_path: Path, zookeeper: ZooKeeperServer
) -> None:
    """#36 item 8: 0.1 s into a partition Keeper is silent, not gone; the PUT is refused as retryable."""
    hosts = zookeeper.chroot()
    proxy = PartitionProxy(zookeeper.host, zookeeper.port)
    config = make_service_config(chdb_dsn, new_database_name(), tmp_path)
    configure(config, [SESSION_RULE], 1.0)
    config.fleet = FleetConfig(keeper=proxy.address + hosts.removeprefix(zookeeper.hosts), replica="cut",
                               session_timeout_s=6.0)  # fmt: skip
    service = Service(config)
    await service.start()
    try:
        assert service.fleet is not None and service.api is not None
        assert await asyncio.to_thread(service.fleet.fleet.wait_joined, 15)
        proxy.cut()
        await asyncio.sleep(0.1)
        new = {"rules": [{"name": "other", "target": "session", "scorers": ["turn_count"]}]}
        async with aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{service.api.port}/api/v1/rules"
            async with http.put(url, json=new) as response:
                assert response.status == 503, await response.text()
                assert response.headers.get("Retry-After"), response.headers
        assert [rule.name for rule in service.rule_control.rule_set.rules] == ["conversation"]
    finally:
        proxy.heal()
        await service.shutdown()
        proxy.close()


async def test_a_fleet_replica_starts_and_stops_without_false_warnings(
    make_fleet: MakeFleet, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    """#36 item 13: no "alert states not read" at start, no "session lost" on a clean stop."""
    caplog.set_level(logging.WARNING)
    [replica] = await make_fleet(1, [SESSION_RULE])
    await replica.shutdown()
    warnings = [
        r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("spanscore")
    ]
    assert warnings == []


async def test_a_keeper_restarted_without_its_data_gets_the_fleets_state_back_from_the_store(
    chdb_dsn: str, tmp_path: Path
) -> None:
    """#36 item 5: old replicas come back, and API rule changes survive a new replica's config file."""
    server = start_zookeeper(tmp_path / "zk")
    database, running = new_database_name(), []

    async def replica(name: str) -> Service:
        config = make_service_config(chdb_dsn, database, tmp_path / name)
        configure(config, [SESSION_RULE], 1.0)
        config.fleet = FleetConfig(keeper=server.hosts, path="/wiped", replica=name, session_timeout_s=2.0)
        service = Service(config)
        await service.start()
        running.append(service)
        assert service.fleet is not None
        assert await asyncio.to_thread(service.fleet.fleet.wait_joined, 15)
        return service

    try:
        old = await replica("r0")
        assert old.api is not None
        await until(lambda: _published(old))
        new_rules = {"rules": [{"name": "turns-only", "target": "session", "scorers": ["turn_count"]}]}
        async with aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{old.api.port}/api/v1/rules"
            async with http.put(url, json=new_rules) as response:
                assert response.status == 200, await response.text()
        assert old.fleet is not None and old.fleet.rules.fleet_version == 1
        server = await asyncio.to_thread(restart_wiped, server)
        fleet = old.fleet.fleet

        async def rejoined() -> bool:
            return fleet.joined and fleet.session_losses > 0

        await until(rejoined, timeout_s=30)
        joiner = await replica("r1")  # its config file has the old rules
        for service in (old, joiner):

            async def runs_api_rules(service: Service = service) -> bool:
                return [rule.name for rule in service.rule_control.rule_set.rules] == ["turns-only"]

            await until(runs_api_rules, timeout_s=15)
        data, _ = await asyncio.to_thread(fleet.client.get, fleet.node("rules"))
        document = json.loads(data)
        assert [rule["name"] for rule in document["rules"]] == ["turns-only"] and document["generation"] == 1
        assert sorted(joiner.fleet.fleet.members()) == ["r0", "r1"] if joiner.fleet else False
    finally:
        for service in running:
            await service.shutdown()
        server.stop()


async def test_when_the_fleets_rules_replace_a_files_rules_the_log_metrics_and_status_say_so(
    chdb_dsn: str, zookeeper: ZooKeeperServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """#36 item 13: a rule newly added to a replica's file is replaced by the fleet's set: a WARNING, not INFO."""
    keeper, database, running = zookeeper.chroot(), new_database_name(), []
    added = {"name": "added-to-file", "target": "session", "scorers": ["turn_count"]}
    try:
        for name, rules in (("r0", [SESSION_RULE]), ("r1", [SESSION_RULE, added])):
            config = make_service_config(chdb_dsn, database, tmp_path / name)
            configure(config, rules, 1.0)
            config.fleet = FleetConfig(keeper=keeper, replica=name, session_timeout_s=2.0)
            service = Service(config)
            await service.start()
            running.append(service)
            await until(lambda service=service: _published(service), timeout_s=15)  # type: ignore[misc]
        late = running[1]
        assert [rule.name for rule in late.rule_control.rule_set.rules] == ["conversation"]
        assert late.metrics()["fleet_rules_replace_file"] == 1.0
        assert "fleet's published rules replaced" in format_status(late.metrics(), "http://x")
        warned = [r for r in caplog.records if "config file's rules are replaced" in r.getMessage()]
        assert warned and warned[0].levelno == logging.WARNING and "- added-to-file" in warned[0].getMessage()
    finally:
        for service in running:
            await service.shutdown()


async def test_a_replica_says_so_when_another_fleet_writes_to_its_database(
    chdb_dsn: str, tmp_path: Path, zookeeper: ZooKeeperServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The independent check: two fleets on one database (two Keeper paths) shared rule sets, and nothing said.

    Each replica beats into the store with its fleet's Keeper path; one that finds another fleet's heartbeats
    there is degraded (/healthz, /readyz, status), says what to do in an ERROR, and counts it in /metrics.
    """
    database = new_database_name()
    services = []
    for path in ("/team-a", "/team-b"):
        config = make_service_config(chdb_dsn, database, tmp_path / path.strip("/"))
        configure(config, [], 1.0)
        config.fleet = FleetConfig(keeper=zookeeper.chroot(), path=path, replica="r0", session_timeout_s=2.0)
        services.append(Service(config))
    try:
        for service in services:
            await service.start()

        async def both_see_the_other() -> bool:
            return all(s.metrics().get("fleet_other_fleets_in_store") == 1.0 for s in services)

        await until(both_see_the_other, timeout_s=20)
        status, health = await get_json(services[0], "/healthz")
        assert status == 200 and health["status"] == "degraded", health
        assert "another fleet writes to this database" in health["degraded"], health
        assert "/team-b (r0)" in health["degraded"] and "its own storage database" in health["degraded"], health
        status, text = await get_text(services[1], "/metrics")
        assert status == 200 and "spanscore_fleet_other_fleets_in_store 1.0" in text
        assert "degraded: another fleet writes to this database" in format_status(services[1].metrics(), "http://x")
    finally:
        for service in services:
            await service.shutdown()
    assert "another fleet writes to this database" in caplog.text
