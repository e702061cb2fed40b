"""``spanscore config check --keeper``: does a replica with this config find its fleet, and share its rules?

Against a real ZooKeeper (ClickHouse Keeper speaks its protocol); the check joins nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanscore.cli.commands import main
from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet
from tests.zookeeper import ZooKeeperServer, _free_port

RULES = "rules: [{name: answers, scorers: [completeness]}]\n"


def _config(tmp_path: Path, keeper: str | None, rules: str = RULES) -> str:
    path = tmp_path / "c.yaml"
    fleet = f"fleet: {{keeper: '{keeper}', replica: checker}}\n" if keeper else ""
    path.write_text(f"storage: {{dsn: 'clickhouse://spanscore_owner:pw@clickhouse:8123/'}}\n{fleet}{rules}")
    return str(path)


def test_a_live_fleet_is_described_and_its_rules_compared(
    zookeeper: ZooKeeperServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keeper = zookeeper.chroot()
    replica = Fleet(FleetConfig(keeper=keeper, replica="r0"))
    replica.start()
    try:
        assert replica.wait_joined(15)
        replica.publish_status(rules_version="abc")
        assert main(["config", "check", "-c", _config(tmp_path, keeper), "--keeper"]) == 0
        out = capsys.readouterr().out
        assert "replica r0 (leader) applied rules abc" in out
        assert "no rule set published yet" in out
        rules = [{"name": "other", "scorers": ["completeness"]}]
        replica.write("rules", json.dumps({"rules": rules}).encode(), expected_version=-1)
        assert main(["config", "check", "-c", _config(tmp_path, keeper), "--keeper"]) == 0
        assert "differ from this file's" in capsys.readouterr().out
        same = "rules: [{name: other, scorers: [completeness]}]\n"
        assert main(["config", "check", "-c", _config(tmp_path, keeper, same), "--keeper"]) == 0
        assert "rules v0 (" in (out := capsys.readouterr().out) and "are this file's" in out
        assert replica.statuses().keys() == {"r0"}  # the check joined nothing
    finally:
        replica.stop()


def test_no_keeper_or_no_fleet_section_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", "-c", _config(tmp_path, f"127.0.0.1:{_free_port()}"), "--keeper"]) == 1
    assert "did not answer within 5 s" in capsys.readouterr().out
    assert main(["config", "check", "-c", _config(tmp_path, None), "--keeper"]) == 1
    assert "has no fleet: section" in capsys.readouterr().out


HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07"
"""A window title change, a screen clear and a clipboard write: what a Keeper writer could put in a status."""


def test_keeper_text_reaches_the_terminal_escaped(
    zookeeper: ZooKeeperServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keeper = zookeeper.chroot()
    replica = Fleet(FleetConfig(keeper=keeper, replica="r0"))
    replica.start()
    try:
        assert replica.wait_joined(15)
        replica.publish_status(rules_version=HOSTILE)
        assert main(["config", "check", "-c", _config(tmp_path, keeper), "--keeper"]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out
        assert "\\x1b]0;owned\\x07" in out
    finally:
        replica.stop()


def test_rules_show_escapes_the_fleet_block(capsys: pytest.CaptureFixture[str]) -> None:
    from spanscore.cli.rules import _fleet_note

    _fleet_note({"version": 1, "fleet": {"version": 2, "rules_version": HOSTILE, "replicas": {HOSTILE: {}}}})
    _fleet_note({"version": 1, "fleet": {"error": HOSTILE}})
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b[2J" in out


def test_a_refused_credential_is_named_not_reported_as_silence(
    zookeeper: ZooKeeperServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fleet whose nodes admit another credential answers at once; the check said 'did not answer within 5 s'."""
    keeper = zookeeper.chroot()
    monkeypatch.setenv("FLEET_KEEPER_AUTH", "spanscore:s3cret")
    replica = Fleet(FleetConfig(keeper=keeper, replica="r0", auth_env="FLEET_KEEPER_AUTH"))
    replica.start()
    try:
        assert replica.wait_joined(15)
        assert main(["config", "check", "-c", _config(tmp_path, keeper), "--keeper"]) == 1
        out = capsys.readouterr().out
        assert "refused this credential (NoAuthError)" in out and "did not answer" not in out, out
    finally:
        replica.stop()
