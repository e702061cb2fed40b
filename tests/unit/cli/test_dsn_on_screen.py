"""No DSN password reaches the terminal: every command that names the store prints it through one redaction.

Issue #37 item 11: with the store unreachable, `query`, `report trend`, `rules preview` and a local dead-letter
replay printed the DSN with its password, and `config check` cut the DSN at the first ``@``, so a password with
an ``@`` in it was half printed. The DSN here points at a closed loopback port, so every command fails to reach
the store and says so; none may show any part of the password.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from spanscore.cli.commands import main
from spanscore.records import SpanRecord
from spanscore.storage.connection import redact
from spanscore.storage.write.deadletter import DeadLetters
from spanscore.storage.write.paths import SPAN_SPOOL_CODEC, dead_letter_dir

PASSWORD = "s3cr@t-p@ss:word"
"""A password with the characters that break a naive split: ``@`` and ``:`` (written raw, as users do)."""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("clickhouse://owner:pw@db:8123/x", "clickhouse://owner:***@db:8123/x"),
        (f"clickhouse://owner:{PASSWORD}@db:8123/x", "clickhouse://owner:***@db:8123/x"),
        ("https://owner:p%40ss@db:8443", "https://owner:***@db:8443"),
        ("clickhouse://owner@db:8123", "clickhouse://owner@db:8123"),
        ("clickhouse://db:8123/?password=pw&compress=1", "clickhouse://db:8123/?password=***&compress=1"),
        ("chdb:///var/lib/spanscore", "chdb:///var/lib/spanscore"),
    ],
)
def test_redact_splits_the_dsn_the_way_the_driver_does(dsn: str, shown: str) -> None:
    assert redact(dsn) == shown


@pytest.mark.parametrize(
    "argv",
    [
        ["query", "SELECT 1"],
        ["report", "trend", "--scorer", "completeness"],
        ["rules", "preview", "default"],
        ["deadletter", "replay"],
    ],
)
def test_no_command_prints_the_password(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPANSCORE_API__PORT", str(_closed_port()))
    monkeypatch.setenv("SPANSCORE_STORAGE__DSN", f"clickhouse://owner:{PASSWORD}@127.0.0.1:{_closed_port()}/x")
    if argv[0] == "deadletter":  # a local replay opens the store only when something is dead-lettered
        spans = [SpanRecord(f"{1:032x}", f"{2:016x}", "", "step", "Internal", 10**18, 10**18, "dead")]
        spool = tmp_path / "spanscore-data" / "spool"
        DeadLetters(dead_letter_dir(spool, "spans"), "spans", SPAN_SPOOL_CODEC).add(spans, "Code: 72. bad", 72)
    assert main(argv) != 0
    out = capsys.readouterr()
    for part in ("s3cr", "p@ss", "ss:word", PASSWORD):
        assert part not in out.err + out.out, (argv, out.err, out.out)


def test_config_check_hides_a_password_with_an_at_sign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPANSCORE_STORAGE__DSN", f"clickhouse://owner:{PASSWORD}@127.0.0.1:{_closed_port()}/x")
    main(["config", "check"])
    out = capsys.readouterr()
    assert "storage: clickhouse://owner:***@127.0.0.1:" in out.out
    for part in ("s3cr", "p@ss", "ss:word"):
        assert part not in out.err + out.out
