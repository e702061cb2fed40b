"""`spanscore query` with no service and no store says where it looked and creates nothing."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from spanscore.cli.commands import main


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_query_elsewhere_fails_without_creating_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPANSCORE_API__PORT", str(_unused_port()))
    assert main(["query", "SELECT count() FROM otel_traces"]) == 1
    err = capsys.readouterr().err
    assert f"no store at {(tmp_path / 'spanscore-data').as_posix()}" in err
    assert "no service answers on http://127.0.0.1:" in err
    assert list(tmp_path.iterdir()) == []
    assert main(["report", "trend", "--scorer", "completeness"]) == 1
    assert list(tmp_path.iterdir()) == []
