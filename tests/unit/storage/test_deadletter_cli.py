"""``spanscore deadletter list|replay`` without a running service: read the spool directory, replay into the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanscore.cli.commands import main
from spanscore.config import load_config
from spanscore.records import SpanRecord
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.write.deadletter import DeadLetters
from spanscore.storage.write.paths import SPAN_SPOOL_CODEC, dead_letter_dir
from tests.conftest import write_config
from tests.ports import free_port


def _free_port() -> int:
    return free_port()  # below the ephemeral range: no outgoing connection takes it before the bind


def test_list_then_replay_stores_the_rows_and_empties_the_dead_letters(
    tmp_path: Path, chdb_dsn: str, database_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = tmp_path / "spool"
    config = write_config(
        tmp_path,
        f"storage:\n  dsn: {chdb_dsn}\n  database: {database_name}\n  spool_dir: {spool}\n"
        f"api:\n  port: {_free_port()}\n",
    )
    spans = [SpanRecord(f"{1:032x}", f"{i + 1:016x}", "", "step", "Internal", 10**18, 10**18, "dead") for i in range(3)]
    entry = DeadLetters(dead_letter_dir(spool, "spans"), "spans", SPAN_SPOOL_CODEC).add(spans, "Code: 72. was bad", 72)

    assert main(["deadletter", "list", "-c", str(config), "--format", "json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)["entries"]
    assert (listed["id"], listed["writer"], listed["records"]) == (entry.id, "spans", 3)
    assert listed["reason"] == "Code: 72. was bad"

    assert main(["deadletter", "replay", "-c", str(config), "--writer", "spans"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)["replayed"]] == [entry.id]
    assert main(["deadletter", "list", "-c", str(config)]) == 0
    assert capsys.readouterr().out.startswith("0 dead-lettered batches")

    store = ClickHouseStore.from_config(load_config(config).storage)
    store.open()
    try:
        assert store.internal_query("SELECT count() FROM otel_traces WHERE ServiceName = 'dead'") == [(3,)]
    finally:
        store.close()


def test_replay_of_an_unknown_entry_names_it(
    tmp_path: Path, chdb_dsn: str, database_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(
        tmp_path,
        f"storage:\n  dsn: {chdb_dsn}\n  database: {database_name}\n  spool_dir: {tmp_path / 'spool'}\n"
        f"api:\n  port: {_free_port()}\n",
    )
    (tmp_path / "spool").mkdir()  # the service's spool, holding no such entry
    assert main(["deadletter", "replay", "-c", str(config), "--id", "000000000042"]) == 1
    assert "no dead-letter entry '000000000042'" in capsys.readouterr().err
