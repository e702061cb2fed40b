"""Alerts in a fleet (#28 item 2): replicas over one store of scores and one Keeper, one notification per transition.

Each replica is an ``AlertEvaluator`` with its own ZooKeeper session (a real server, tests/zookeeper.py) and
its own notifier; the scores are the service's embedded ClickHouse; the receiver is a webhook on loopback.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from kazoo.client import KazooClient

from spanscore.alerting.config import AlertConfig, AlertingConfig
from spanscore.alerting.evaluator import AlertEvaluator
from spanscore.alerting.keeper_state import KeeperAlertState
from spanscore.alerting.notify import Notifier
from spanscore.server.service import Service
from spanscore.storage.reads.alerts import window_scores
from tests.e2e.alert_parts import Receiver, score_rows
from tests.zookeeper import ZooKeeperServer

BASE = "/spanscore/alerts"


@pytest.fixture
def keeper(zookeeper: ZooKeeperServer) -> Iterator[Callable[[], Any]]:
    """Started clients on one fresh chroot (one per replica); each is stopped and closed at the end."""
    hosts = zookeeper.chroot()
    root = KazooClient(hosts=zookeeper.hosts)
    root.start(timeout=10)
    root.ensure_path(hosts.removeprefix(zookeeper.hosts))  # the chroot exists before its clients connect
    root.stop()
    root.close()
    clients: list[Any] = []

    def connect() -> Any:
        client = KazooClient(hosts=hosts)
        client.start(timeout=10)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        client.stop()
        client.close()


class Replica:
    """One replica's evaluator over the shared scores and Keeper; counts its reads of the scores."""

    def __init__(
        self, service: Service, client: Any, alert: AlertConfig, leader: Callable[[], bool], notifier: Notifier
    ) -> None:
        self.reads = 0
        self.evaluator = AlertEvaluator(
            [alert], SETTINGS, self._read, notifier, state=KeeperAlertState(client, BASE), leader=leader
        )
        self._store = service.store

    def _read(self, *args: Any) -> list[tuple[float | None, float, str]]:
        self.reads += 1
        return window_scores(self._store, *args)

    async def round(self) -> None:
        await self.evaluator.evaluate_all()
        await self.evaluator.notifier.drain()


class DiesBeforeSending(Notifier):
    """A replica that dies right after its claim: the notification never leaves it."""

    def __init__(self, settings: AlertingConfig) -> None:
        super().__init__(settings)
        self.claimed: list[dict[str, Any]] = []

    def notify(self, alert: AlertConfig, event: Mapping[str, Any], on_done: Any = None) -> None:
        self.claimed.append(dict(event))


SETTINGS = AlertingConfig(backoff_s=0.01)


def drop_alert(url: str) -> AlertConfig:
    return AlertConfig.model_validate(
        {"name": "drop", "scorer": "faithfulness", "window": "15m", "below": 0.7, "notify": [{"webhook": url}]}
    )


def statuses(receiver: Receiver) -> list[str]:
    return [body["status"] for body in receiver.bodies]


async def test_two_replicas_send_one_firing_and_one_resolution_across_a_leader_change(
    service: Service, keeper: Callable[[], Any], receiver: Receiver
) -> None:
    alert, leader = drop_alert(receiver.url), ["a"]
    a, b = (Replica(service, keeper(), alert, functools.partial(lambda me: leader[0] == me, me), Notifier(SETTINGS))
            for me in "ab")  # fmt: skip
    service.store.insert_scores_sync(score_rows([0.2] * 40, 0))
    for _ in range(2):
        await a.round()
        await b.round()
    leader[0] = "b"
    service.store.insert_scores_sync(score_rows([1.0] * 300, 1000))
    for _ in range(2):
        await b.round()
        await a.round()
    assert statuses(receiver) == ["firing", "resolved"]
    firing, resolved = receiver.bodies
    assert firing["transition_id"] == resolved["transition_id"] != ""
    assert (firing["id"], resolved["id"]) == (
        f"{firing['transition_id']}:firing",
        f"{firing['transition_id']}:resolved",
    )
    [shown] = a.evaluator.describe()  # the old leader shows what the new one stored
    assert shown["status"] == "ok" and shown["notified"] == "resolved" and shown["pending"] == ""


async def test_two_replicas_that_both_think_they_lead_notify_once(
    service: Service, keeper: Callable[[], Any], receiver: Receiver
) -> None:
    """Leadership changing hands mid-round: both evaluate at once, one claim wins, the loser sends nothing."""
    alert = drop_alert(receiver.url)
    replicas = [Replica(service, keeper(), alert, lambda: True, Notifier(SETTINGS)) for _ in range(3)]
    service.store.insert_scores_sync(score_rows([0.2] * 40, 0))
    await asyncio.gather(*(replica.evaluator.evaluate_all() for replica in replicas))
    for replica in replicas:
        await replica.evaluator.notifier.drain()
    assert sum(replica.reads for replica in replicas) == 3  # all three did evaluate
    assert statuses(receiver) == ["firing"]
    ids = {replica.evaluator.states["drop"].firing_id for replica in replicas}
    assert ids == {receiver.bodies[0]["transition_id"]}  # the losers re-read the winner's firing


async def test_a_claim_left_by_a_dead_leader_is_sent_once_by_the_next(
    service: Service, keeper: Callable[[], Any], receiver: Receiver
) -> None:
    alert, leader = drop_alert(receiver.url), ["a"]
    dying = DiesBeforeSending(SETTINGS)
    a_client = keeper()
    a = Replica(service, a_client, alert, lambda: leader[0] == "a", dying)
    b = Replica(service, keeper(), alert, lambda: leader[0] == "b", Notifier(SETTINGS))
    service.store.insert_scores_sync(score_rows([0.2] * 40, 0))
    await a.round()
    assert [event["status"] for event in dying.claimed] == ["firing"] and receiver.bodies == []
    a_client.stop()  # the leader is gone; its claim stays in Keeper
    await b.round()  # b is not the leader yet: it shows the claim but sends nothing
    assert receiver.bodies == [] and b.evaluator.describe()[0]["pending"] == "firing"
    leader[0] = "b"
    for _ in range(3):
        await b.round()
    assert statuses(receiver) == ["firing"]
    assert receiver.bodies[0] == dying.claimed[0]  # the very notification the dead leader claimed
    assert b.evaluator.describe()[0]["pending"] == ""


async def test_a_replica_that_does_not_lead_reads_no_scores_and_shows_the_fleet_state(
    service: Service, keeper: Callable[[], Any], receiver: Receiver
) -> None:
    alert = drop_alert(receiver.url)
    a = Replica(service, keeper(), alert, lambda: True, Notifier(SETTINGS))
    b = Replica(service, keeper(), alert, lambda: False, Notifier(SETTINGS))
    service.store.insert_scores_sync(score_rows([0.2] * 40, 0))
    for _ in range(3):
        await a.round()
        await b.round()
    assert (a.reads, b.reads) == (3, 0) and b.evaluator.evaluations == 0
    assert statuses(receiver) == ["firing"]
    [shown] = b.evaluator.describe()
    assert shown["status"] == "firing" and shown["samples"] == 40 and shown["firing_id"]
    assert b.evaluator.metrics()['alert_firing{alert="drop"}'] == 1


async def test_with_keeper_unreachable_nothing_is_notified_until_it_is_back(
    service: Service, keeper: Callable[[], Any], receiver: Receiver
) -> None:
    """No state store, no claim, no notification: the failure is counted and the last states stay on show."""
    client = keeper()
    a = Replica(service, client, drop_alert(receiver.url), lambda: True, Notifier(SETTINGS))
    await a.round()
    client.stop()
    service.store.insert_scores_sync(score_rows([0.2] * 40, 0))
    for _ in range(2):
        await a.round()
    assert receiver.bodies == [] and a.reads == 1 and a.evaluator.evaluation_failures == 2
    assert a.evaluator.describe()[0]["status"] == "insufficient_data"
    client.start(timeout=10)
    await a.round()
    assert statuses(receiver) == ["firing"]
