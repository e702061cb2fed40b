"""A fleet over per-replica embedded stores is refused, at start and by ``config check --keeper`` (#36 item 12).

Two replicas, each with its own ``storage.data_dir``, passed ``config check --keeper`` and joined the fleet;
a two-turn session with one turn sent to each was scored as one turn. Each replica's store is its own, so a
fleet needs one ClickHouse server that every replica uses.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spanscore.cli.commands import main
from tests.zookeeper import ZooKeeperServer


def _config(tmp_path: Path, keeper: str, storage: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(f"storage: {storage}\nfleet: {{keeper: '{keeper}', replica: a}}\n")
    return str(path)


def test_serve_refuses_a_fleet_over_its_own_embedded_store(zookeeper: ZooKeeperServer, tmp_path: Path) -> None:
    config = _config(tmp_path, zookeeper.chroot(), f"{{data_dir: {(tmp_path / 'data').as_posix()}}}")
    done = subprocess.run(
        [sys.executable, "-m", "spanscore.cli", "serve", "-c", config],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "a fleet needs one shared ClickHouse server" in done.stderr
    assert f"chdb://{(tmp_path / 'data').as_posix()}" in done.stderr
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())  # refused before opening


@pytest.mark.parametrize("storage", ["{data_dir: DATA}", "{dsn: 'chdb:///DATA/store'}"])
def test_config_check_keeper_refuses_it_with_the_reason(
    zookeeper: ZooKeeperServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], storage: str
) -> None:
    config = _config(tmp_path, zookeeper.chroot(), storage.replace("DATA", (tmp_path / "d").as_posix()))
    assert main(["config", "check", "-c", config, "--keeper"]) == 1
    out = capsys.readouterr().out
    assert "missing: fleet: a fleet needs one shared ClickHouse server" in out
    assert "set storage.dsn to the server every replica uses" in out


def test_a_server_dsn_passes(zookeeper: ZooKeeperServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, zookeeper.chroot(), "{dsn: 'clickhouse://spanscore_owner:pw@clickhouse:8123/'}")
    assert main(["config", "check", "-c", config, "--keeper"]) == 0
    assert "shared ClickHouse" not in capsys.readouterr().out
