"""A deployment starts on the first try: writable data directory, one-shot migration, config check.

The service is started as a real process with its config in a directory it cannot write (tests run as
root, where a mode of 0555 stops nothing, so the places it would write next to the config are taken by
files; a non-root run through setpriv checks the same with real permissions when setpriv exists).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from spanscore.cli.commands import main
from spanscore.errors import ConfigError
from spanscore.storage.clickhouse import ClickHouseStore

ROOT = Path(__file__).resolve().parents[2]
SERVE_CONFIG = """collector:
  grpc: {port: 0}
  http: {port: 0}
api: {port: 0}
rules: [{name: checks, scorers: [completeness]}]
"""


def _serve(config: Path, cwd: Path, prefix: list[str] | None = None) -> tuple[int, str]:
    """Start `spanscore serve`, wait for its banner (or its exit), SIGTERM it; return exit code and output."""
    process = subprocess.Popen(
        [*(prefix or []), sys.executable, "-m", "spanscore.cli.commands", "serve", "-c", str(config)],
        cwd=cwd,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("spanscore serving"):
            process.send_signal(signal.SIGTERM)
            break
    try:
        rest, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, "".join(lines) + (rest or "")


def _read_only_config_dir(tmp_path: Path) -> Path:
    config_dir = tmp_path / "etc"
    config_dir.mkdir()
    (config_dir / "spanscore.yaml").write_text(SERVE_CONFIG, encoding="utf-8")
    for name in ("spanscore-data", "spanscore-spool", "spool"):
        (config_dir / name).write_text("not a directory\n", encoding="utf-8")
    config_dir.chmod(0o555)
    return config_dir


def test_serve_starts_with_a_read_only_config_directory(tmp_path: Path) -> None:
    config_dir = _read_only_config_dir(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    code, output = _serve(config_dir / "spanscore.yaml", work)
    assert code == 0, output
    assert "spanscore serving" in output
    assert (work / "spanscore-data").is_dir()


@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0, reason="needs setpriv and root")
def test_serve_starts_as_a_non_root_user_with_root_owned_config() -> None:
    base = Path(tempfile.mkdtemp(prefix="spanscore-nonroot-"))  # pytest's tmp_path is private to root
    try:
        base.chmod(0o755)
        config_dir = _read_only_config_dir(base)
        work = base / "work"
        work.mkdir()
        os.chown(work, 10001, 10001)
        prefix = ["setpriv", "--reuid=10001", "--regid=10001", "--clear-groups"]
        code, output = _serve(config_dir / "spanscore.yaml", work, prefix)
        assert code == 0, output
        assert (work / "spanscore-data" / "spool").is_dir()
    finally:
        (base / "etc").chmod(0o755)
        shutil.rmtree(base)


def test_replicas_with_migrate_off_wait_for_the_migrate_command(
    chdb_dsn: str, database_name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match="spanscore migrate"):
        ClickHouseStore(chdb_dsn, database_name, migrate_schema=False).open()
    monkeypatch.setenv("SPANSCORE_STORAGE__DSN", chdb_dsn)
    monkeypatch.setenv("SPANSCORE_STORAGE__DATABASE", database_name)
    assert main(["migrate"]) == 0
    assert f"schema of database {database_name} is up to date" in capsys.readouterr().out
    store = ClickHouseStore(chdb_dsn, database_name, migrate_schema=False)
    store.open()
    try:
        assert store.query_sync("SELECT count() FROM scores", "CSV").split() == [b'"count()"', b"0"]
    finally:
        store.close()


def test_config_check_reports_what_serve_would_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    data = (tmp_path / "data").as_posix()
    path.write_text(f"storage: {{data_dir: {data}}}\nrules: [{{name: checks, scorers: [completeness]}}]\n")
    assert main(["config", "check", "-c", str(path)]) == 0
    out = capsys.readouterr().out
    assert "rule checks: sample=1 scorers=completeness" in out and f"config {path}: OK" in out
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rules: [{name: r, scorers: [faithfulness]}]\n", "no judge model is configured"),
        ("rules: [{name: r, scorers: [{name: completeness, bogus: 1}]}]\n", "unknown option(s) bogus"),
        ("storage: {data_dir: DATA/inside}\n", "is not a directory"),
        ("rules: [{name: r, sample: 2, scorers: [completeness]}]\n", "rules[0].sample"),
        # Receivers beyond loopback without tokens: serve refuses before binding, so check must too (#30).
        ("collector: {grpc: {host: 0.0.0.0, port: 0}, http: {port: 0}}\n", "collector.grpc.host is '0.0.0.0'"),
        ("collector: {http: {host: 0.0.0.0, port: 0}, grpc: {port: 0}}\n", "collector.http.host is '0.0.0.0'"),
    ],
)
def test_config_check_fails_on_what_serve_would_refuse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    (tmp_path / "DATA").write_text("a file where a directory should be\n")
    path = tmp_path / "c.yaml"
    path.write_text(text.replace("DATA", (tmp_path / "DATA").as_posix()))
    assert main(["config", "check", "-c", str(path)]) != 0
    assert expected in capsys.readouterr().err
