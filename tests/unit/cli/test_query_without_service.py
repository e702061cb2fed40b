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


@pytest.mark.parametrize(
    "argv",
    [
        ["status"],
        ["runs", "show", "0af7651916cd43dd8448eb211c80319c"],
        ["rules", "preview", "default"],
        ["rules", "show"],
        ["report", "agreement", "--scorer", "answer_health"],
        ["backfill", "default", "--since", "1h"],
        ["backfill", "--cancel"],
        ["deadletter", "list"],
        ["deadletter", "replay"],
    ],
)
def test_commands_that_need_a_service_say_where_they_looked_and_create_nothing(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    port = _unused_port()
    monkeypatch.setenv("SPANSCORE_API__PORT", str(port))
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"no service answers on http://127.0.0.1:{port}" in err, err
    assert "SPANSCORE_API__PORT" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == [], "a command that found no service created files"


def test_rules_diff_without_a_service_names_the_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    port = _unused_port()
    monkeypatch.setenv("SPANSCORE_API__PORT", str(port))
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: q\n    scorers: [completeness]\n", encoding="utf-8")
    assert main(["rules", "diff", str(rules)]) == 2
    err = capsys.readouterr().err
    assert f"no service answers on http://127.0.0.1:{port}" in err and "nothing to compare with" in err, err
