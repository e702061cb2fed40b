"""Membership, leader and owners through a real ZooKeeper: what every fleet feature stands on."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet, KeeperUnavailable, VersionConflict, rendezvous_owner
from tests.zookeeper import ZooKeeperServer


def _until(check: Callable[[], bool], timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


@pytest.fixture
def make_fleet(zookeeper: ZooKeeperServer) -> Iterator[Callable[[str], Fleet]]:
    hosts = zookeeper.chroot()
    started: list[Fleet] = []

    def make(name: str) -> Fleet:
        fleet = Fleet(FleetConfig(keeper=hosts, replica=name, session_timeout_s=2.0))
        fleet.start()
        assert fleet.wait_joined(15), f"{name} did not join"
        started.append(fleet)
        return fleet

    yield make
    for fleet in started:
        if fleet.state != "stopped":
            fleet.stop()


def test_replicas_agree_on_members_leader_and_owners(make_fleet: Callable[[str], Fleet]) -> None:
    a, b, c = make_fleet("a"), make_fleet("b"), make_fleet("c")
    _until(lambda: all(f.members() == ["a", "b", "c"] for f in (a, b, c)))
    assert [f.is_leader() for f in (a, b, c)] == [True, False, False]  # first to join leads
    keys = [f"session-{i}" for i in range(300)]
    owners = {key: a.owner(key) for key in keys}
    assert all(b.owner(key) == owners[key] and c.owner(key) == owners[key] for key in keys)
    assert set(owners.values()) == {"a", "b", "c"}  # spread, not all on one
    a.stop()
    _until(lambda: b.members() == ["b", "c"] and c.members() == ["b", "c"])
    assert b.is_leader() and not c.is_leader()
    moved = [key for key in keys if b.owner(key) != owners[key]]
    assert moved and all(owners[key] == "a" for key in moved)  # only the leaver's keys move


def test_an_expired_replica_leaves_the_fleet(make_fleet: Callable[[str], Fleet]) -> None:
    a, b = make_fleet("a"), make_fleet("b")
    _until(lambda: b.members() == ["a", "b"])
    a.expire()
    _until(lambda: b.members() == ["b"], timeout_s=20)
    assert b.is_leader() and a.state == "stopped"


def test_documents_are_written_with_compare_and_set(make_fleet: Callable[[str], Fleet]) -> None:
    a, b = make_fleet("a"), make_fleet("b")
    seen: list[tuple[bytes | None, int]] = []
    b.watch("rules", lambda data, version: seen.append((data, version)))
    assert a.read("rules") == (None, -1)
    assert a.write("rules", b"one", expected_version=-1) == 0
    with pytest.raises(VersionConflict):
        b.write("rules", b"other", expected_version=-1)
    assert b.write("rules", b"two", expected_version=0) == 1
    with pytest.raises(VersionConflict):
        a.write("rules", b"stale", expected_version=0)
    _until(lambda: seen[-1:] == [(b"two", 1)])
    a.publish_status(rules_version="v2")
    _until(lambda: b.statuses().get("a", {}).get("rules_version") == "v2")


def test_without_keeper_nothing_waits_and_writes_say_why() -> None:
    fleet = Fleet(FleetConfig(keeper="127.0.0.1:9", replica="alone", session_timeout_s=2.0))
    fleet.start()
    try:
        assert not fleet.connected and not fleet.is_leader()
        assert fleet.members() == ["alone"] and fleet.owns("any-session")
        with pytest.raises(KeeperUnavailable, match="fleet coordination is unavailable"):
            fleet.write("rules", b"x", expected_version=-1)
    finally:
        fleet.stop()


def test_rendezvous_owner_is_a_pure_function_of_key_and_members() -> None:
    assert rendezvous_owner("k", ["a", "b"]) == rendezvous_owner("k", ["b", "a"])
    assert rendezvous_owner("k", ["x"]) == "x"


def test_with_a_credential_the_fleets_nodes_admit_only_its_holders(
    zookeeper: ZooKeeperServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoAuthError

    hosts = zookeeper.chroot()
    monkeypatch.setenv("FLEET_KEEPER_AUTH", "spanscore:s3cret")
    fleet = Fleet(FleetConfig(keeper=hosts, replica="a", auth_env="FLEET_KEEPER_AUTH"))
    fleet.start()
    outsider = KazooClient(hosts=hosts)
    outsider.start(timeout=10)
    try:
        assert fleet.wait_joined(15)
        fleet.write("rules", b"secret rules", expected_version=-1)
        with pytest.raises(NoAuthError):
            outsider.get("/spanscore/rules")
        with pytest.raises(NoAuthError):
            outsider.create("/spanscore/members/intruder-", b"{}", ephemeral=True, sequence=True)
        with pytest.raises(NoAuthError):
            outsider.set("/spanscore/rules", b"rules of my own")
        assert fleet.read("rules")[0] == b"secret rules"
    finally:
        outsider.stop()
        outsider.close()
        fleet.stop()


def test_an_unusable_credential_is_refused_naming_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from spanscore.errors import ConfigError

    monkeypatch.delenv("FLEET_KEEPER_AUTH", raising=False)
    with pytest.raises(ConfigError, match="FLEET_KEEPER_AUTH must hold user:password.*not set"):
        Fleet(FleetConfig(keeper="127.0.0.1:2181", auth_env="FLEET_KEEPER_AUTH"))
    monkeypatch.setenv("FLEET_KEEPER_AUTH", "no-colon")
    with pytest.raises(ConfigError, match="FLEET_KEEPER_AUTH must hold user:password"):
        Fleet(FleetConfig(keeper="127.0.0.1:2181", auth_env="FLEET_KEEPER_AUTH"))
