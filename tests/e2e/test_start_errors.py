"""What a newcomer's second hour meets at start-up: each error names the key, the file or the variable, and the
fix, without a traceback (issue #40 item 5)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from spanscore.config import load_config
from spanscore.errors import ConfigError
from tests.e2e.test_process import _free_port, _start


def _config(path: Path, api_port: int, data_dir: Path | None = None) -> Path:
    storage = f"storage: {{data_dir: {data_dir.as_posix()}}}\n" if data_dir else ""
    path.write_text(
        f"collector:\n  grpc: {{port: {_free_port()}}}\n  http: {{port: {_free_port()}}}\n"
        f"api: {{port: {api_port}}}\n{storage}",
        encoding="utf-8",
    )
    return path


def _serve(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spanscore.cli.commands", "serve", "-c", str(config)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_second_serve_on_one_data_directory_and_a_taken_port_say_what_to_change(tmp_path: Path) -> None:
    first = _start(_config(tmp_path / "first.yaml", _free_port()))
    try:
        second = _serve(_config(tmp_path / "second.yaml", _free_port()))
        assert second.returncode == 1
        assert "is open in another process" in second.stderr and "storage.data_dir" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        clash = _serve(_config(tmp_path / "clash.yaml", port, tmp_path / "own"))
    assert clash.returncode == 1
    assert f"port {port} (api.port) is already in use" in clash.stderr and "SPANSCORE_API__PORT" in clash.stderr
    assert "Traceback" not in clash.stderr


def test_an_unknown_key_from_the_environment_names_the_variable_and_the_near_key() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(None, {"SPANSCORE_API__PROT": "1"})
    assert "api.prot (from the environment, SPANSCORE_API__PROT): unknown key (did you mean 'port'?)" in str(
        raised.value
    )


def test_an_unknown_key_in_the_file_gets_the_near_key(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("collector: {runs: {quiet_period: 1}}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(path, {})
    text = str(raised.value)
    assert "collector.runs.quiet_period: unknown key (did you mean 'quiet_period_s'?)" in text
    assert "(from the environment" not in text


def test_keys_and_scorers_are_reported_together(tmp_path: Path) -> None:
    """The README says every problem is listed; keys came first and scorers only once the keys were fixed."""
    path = tmp_path / "c.yaml"
    path.write_text("api: {prot: 1}\nrules: [{name: a, scorers: [faithfullness]}]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(path, {})
    text = str(raised.value)
    assert "2 problem(s)" in text and "api.prot: unknown key (did you mean 'port'?)" in text
    assert "rules[0].scorers[0]: unknown scorer 'faithfullness' (did you mean 'faithfulness'?)" in text
