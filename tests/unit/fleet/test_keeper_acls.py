"""``fleet.auth_env`` closes the fleet's nodes that already exist, and ``config check --keeper`` shows real ACLs.

Issue #37, item 3: after a replica ran without a credential, adding ``auth_env`` left ``/path``,
``/path/members`` and ``/path/rules`` open to ``world:anyone``; an anonymous write to the rules was applied,
while ``config check --keeper`` said the nodes admit only the credential. Against a real ZooKeeper.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from spanscore.cli.commands import main
from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet
from tests.zookeeper import ZooKeeperServer

RULES = [{"name": "answers", "scorers": ["completeness"]}]


@pytest.fixture
def open_fleet(zookeeper: ZooKeeperServer) -> Iterator[str]:
    """A fleet path whose nodes a replica without a credential created: open to any client."""
    hosts = zookeeper.chroot()
    first = Fleet(FleetConfig(keeper=hosts, replica="old"))
    first.start()
    try:
        assert first.wait_joined(15)
        first.write("rules", json.dumps({"rules": RULES}).encode(), expected_version=-1)
    finally:
        first.stop()
    yield hosts


@pytest.fixture
def outsider(open_fleet: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=open_fleet)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def test_a_credential_closes_the_nodes_an_open_replica_left(
    open_fleet: str, outsider: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_KEEPER_AUTH", "spanscore:s3cret")
    fleet = Fleet(FleetConfig(keeper=open_fleet, replica="a", auth_env="FLEET_KEEPER_AUTH"))
    fleet.start()
    try:
        assert fleet.wait_joined(15)
        for node in ("/spanscore", "/spanscore/members", "/spanscore/rules"):
            acls, _ = fleet.client.get_acls(node)
            assert [(acl.id.scheme, acl.id.id.partition(":")[0]) for acl in acls] == [("digest", "spanscore")], node
            with pytest.raises(NoAuthError):
                outsider.get_acls(node)
        with pytest.raises(NoAuthError):
            outsider.set("/spanscore/rules", b'{"rules": []}')
        with pytest.raises(NoAuthError):
            outsider.create("/spanscore/members/intruder-", b"{}", ephemeral=True, sequence=True)
        assert json.loads(fleet.read("rules")[0] or b"")["rules"] == RULES
    finally:
        fleet.stop()


def _config(tmp_path: Path, keeper: str, auth_env: str = "") -> str:
    path = tmp_path / "c.yaml"
    auth = f", auth_env: {auth_env}" if auth_env else ""
    path.write_text(
        "storage: {dsn: 'clickhouse://spanscore_owner:pw@clickhouse:8123/'}\n"
        f"fleet: {{keeper: '{keeper}', replica: checker{auth}}}\n"
        "rules: [{name: answers, scorers: [completeness]}]\n"
    )
    return str(path)


def test_config_check_keeper_reports_each_nodes_real_acl(
    open_fleet: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_KEEPER_AUTH", "spanscore:s3cret")
    assert main(["config", "check", "-c", _config(tmp_path, open_fleet, "FLEET_KEEPER_AUTH"), "--keeper"]) == 0
    out = capsys.readouterr().out
    assert "nodes admit only it" not in out
    assert "fleet: node /spanscore/rules admits world:anyone (open to any Keeper client)" in out
    assert "warning: 3 of the fleet's nodes are open" in out
    fleet = Fleet(FleetConfig(keeper=open_fleet, replica="a", auth_env="FLEET_KEEPER_AUTH"))
    fleet.start()
    try:
        assert fleet.wait_joined(15)
        assert main(["config", "check", "-c", _config(tmp_path, open_fleet, "FLEET_KEEPER_AUTH"), "--keeper"]) == 0
        out = capsys.readouterr().out
        assert "fleet: node /spanscore/rules admits digest:spanscore" in out
        assert "world:anyone" not in out
    finally:
        fleet.stop()
