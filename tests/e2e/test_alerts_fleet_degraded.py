"""Alerts in a fleet that loses Keeper (#36 items 4 and 5): the store's record of deliveries decides.

Each replica is an ``AlertEvaluator`` with its own real ZooKeeper session and the store's delivery record
(``storage.fleet_records``) over the service's embedded ClickHouse; the receiver is a webhook on loopback
that takes 3 s to answer, so a leader can be cut while its delivery is under way.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from kazoo.client import KazooClient

from spanscore.alerting.config import AlertingConfig
from spanscore.alerting.evaluator import AlertEvaluator
from spanscore.alerting.keeper_state import KeeperAlertState
from spanscore.alerting.notify import Notifier
from spanscore.server.service import Service
from spanscore.storage.fleet_records import StoredDeliveries
from spanscore.storage.reads.alerts import window_scores
from tests.e2e.alert_parts import Receiver, score_rows
from tests.e2e.test_alerts_fleet import drop_alert, statuses
from tests.zookeeper import ZooKeeperServer

SETTINGS = AlertingConfig(backoff_s=0.01, max_attempts=2, timeout_s=5.0)


class SlowReceiver(Receiver):
    """Answers every notification after ``delay_s``: a delivery is under way for that long."""

    delay_s = 3.0

    async def _handle(self, request: web.Request) -> web.Response:
        await asyncio.sleep(self.delay_s)
        return await super()._handle(request)


@pytest.fixture
async def slow_receiver() -> AsyncIterator[SlowReceiver]:
    made = SlowReceiver()
    await made.start()
    yield made
    await made.stop()


def connect(hosts: str, clients: list[Any]) -> Any:
    client = KazooClient(hosts=hosts)
    client.start(timeout=10)
    clients.append(client)
    return client


def evaluator(service: Service, client: Any, url: str, replica: str, leader: Callable[[], bool]) -> AlertEvaluator:
    return AlertEvaluator(
        [drop_alert(url)], SETTINGS, lambda *args: window_scores(service.store, *args), Notifier(SETTINGS),
        state=KeeperAlertState(client, "/spanscore/alerts"), leader=leader,
        deliveries=StoredDeliveries(service.store, replica),
    )  # fmt: skip


async def test_a_leader_cut_from_keeper_mid_delivery_causes_no_second_notification(
    service: Service, zookeeper: ZooKeeperServer, slow_receiver: SlowReceiver
) -> None:
    hosts, leader = zookeeper.chroot(), ["a"]
    clients: list[Any] = []
    try:
        a_client = connect(hosts, clients)
        a = evaluator(service, a_client, slow_receiver.url, "a", lambda: leader[0] == "a")
        b = evaluator(service, connect(hosts, clients), slow_receiver.url, "b", lambda: leader[0] == "b")
        service.store.insert_scores_sync(score_rows([0.2] * 40, 0))
        await a.evaluate_all()  # claims the firing and starts its 3 s delivery
        await asyncio.sleep(0.5)
        a_client.stop()  # cut mid-delivery: its session ends, b leads
        leader[0] = "b"
        for _ in range(4):  # b sees the claim while a's delivery is still under way
            await b.evaluate_all()
            await asyncio.sleep(0.5)
        await a.notifier.drain()  # a's delivery ends: recorded in the store, its Keeper mark not cleared
        assert statuses(slow_receiver) == ["firing"]
        await b.evaluate_all()  # the store says it was sent: b clears the mark and sends nothing
        assert b.describe()[0]["pending"] == ""
        service.store.insert_scores_sync(score_rows([1.0] * 300, 1000))
        for _ in range(2):
            await b.evaluate_all()
            await b.notifier.drain()
        assert statuses(slow_receiver) == ["firing", "resolved"]
        assert len({body["transition_id"] for body in slow_receiver.bodies}) == 1
    finally:
        for client in clients:
            client.stop()
            client.close()


async def test_an_alert_keeps_its_id_when_keeper_forgot_its_state(
    service: Service, zookeeper: ZooKeeperServer, receiver: Receiver
) -> None:
    """A Keeper without its data (a fresh chroot here) does not make a firing alert a new incident."""
    clients: list[Any] = []
    try:
        receiver_url = receiver.url
        first = evaluator(service, connect(zookeeper.chroot(), clients), receiver_url, "a", lambda: True)
        service.store.insert_scores_sync(score_rows([0.2] * 40, 0))
        await first.evaluate_all()
        await first.notifier.drain()
        assert statuses(receiver) == ["firing"]
        # The same store, a Keeper that holds nothing: a new leader evaluates.
        second = evaluator(service, connect(zookeeper.chroot(), clients), receiver_url, "b", lambda: True)
        await second.evaluate_all()
        await second.notifier.drain()
        assert statuses(receiver) == ["firing"]  # not a second firing under a new id
        assert second.describe()[0]["firing_id"] == receiver.bodies[0]["transition_id"]
        service.store.insert_scores_sync(score_rows([1.0] * 300, 1000))
        await second.evaluate_all()
        await second.notifier.drain()
        assert statuses(receiver) == ["firing", "resolved"]
        assert receiver.bodies[1]["transition_id"] == receiver.bodies[0]["transition_id"]
    finally:
        for client in clients:
            client.stop()
            client.close()
