"""A fleet when Keeper misbehaves (#36 items 1, 4, 5, 6, 8, 13; #37 item 12): real services, a real ZooKeeper.

The replicas are whole ``Service`` objects over one store, as in test_fleet.py; Keeper faults are made on the
real server: a node written by hand, a session closed from outside, the server restarted with its data wiped.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from spanscore.server.service import Service
from tests.e2e import test_fleet
from tests.e2e.test_fleet import MakeFleet, until
from tests.e2e.test_targets import SESSION_RULE

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
