"""Migration 0012: a scored run is keyed by its service too, on new stores and on upgraded ones (issue #26)."""

from __future__ import annotations

import asyncio
import dataclasses

from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.connection import connect
from spanscore.storage.reads.dashboard import scored_runs
from spanscore.storage.schema.migrations import migrate
from spanscore.storage.scored_runs import SCORED_RUN_COLUMNS, ScoredRunRow, scored_run_columns

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
T0 = 1_700_000_000 * 10**9


def _row(service: str, answer: str, version: int) -> ScoredRunRow:
    body = f'{{"service_name": "{service}", "output": "{answer}"}}'
    return ScoredRunRow(T0, TRACE, "00f067aa0ba902b7", "00f067aa0ba902b7", service, "agent", body, version)


def test_an_upgraded_store_keeps_each_services_run_and_shows_a_rescored_one_once(
    chdb_dsn: str, database_name: str
) -> None:
    client = connect(chdb_dsn, database_name)
    assert migrate(client, database_name, upto=11)[-1] == 11
    before = _row("travel-bot", "Sunny.", T0)
    old_columns = [name for name in SCORED_RUN_COLUMNS if name != "RunService"]
    client.insert(
        f"{database_name}.scored_runs",
        scored_run_columns([before])[: len(old_columns)],
        column_names=old_columns,
        column_oriented=True,
    )
    assert migrate(client, database_name)[0] == 12  # and any later migrations
    store = ClickHouseStore(chdb_dsn, database_name)
    store.open()
    try:
        rescored = dataclasses.replace(_row("travel-bot", "Sunny, 21C.", T0 + 2), timestamp_ns=T0 + 2)
        intruder = dataclasses.replace(_row("intruder", "Buy my product.", T0 + 3), timestamp_ns=T0 + 3)
        store.insert_scored_runs_sync([rescored, intruder])
        runs = asyncio.run(scored_runs(store, TRACE))
        assert sorted((run["service_name"], run["output"]) for run in runs) == [
            ("intruder", "Buy my product."),
            ("travel-bot", "Sunny, 21C."),
        ]
        keys = store.internal_query(f"SELECT sorting_key FROM system.tables WHERE database = '{database_name}' "
                                    "AND name = 'scored_runs'")  # fmt: skip
        assert keys == [("TraceId, RunId, RunService",)]
    finally:
        store.close()
