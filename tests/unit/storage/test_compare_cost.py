"""Cost per run in a version comparison (#41 item 2): the average of the known costs of a version's scored runs,
from the roll-up and from the scores alike; a version none of whose runs has a known cost says so (null in JSON
and the API, "unknown" in the table), never 0.
"""

from __future__ import annotations

import dataclasses

import pytest

from spanscore.alerting.version_report import CompareRequest, compare_store
from spanscore.cli.compare import render
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.compare import version_sums
from spanscore.storage.scores import RUN_COST
from tests.unit.storage.test_compare_store import _rows


def _priced() -> list:  # type: ignore[type-arg]
    """1.5.0's runs: every other one priced (0.002 or 0.004 USD), the rest unknown; 1.4.0's: none priced."""
    rows = _rows()[0]
    out = []
    for row in rows:
        index, attributes = int(row.trace_id, 16), dict(row.attributes)
        if attributes["version.service.version"] == "1.5.0" and index % 4 in (0, 2):
            attributes[RUN_COST] = "0.002" if index % 4 == 0 else "0.004"
        out.append(dataclasses.replace(row, attributes=attributes))
    return out


@pytest.mark.parametrize("rollup", [True, False])
async def test_cost_per_run_averages_the_known_costs_and_unknown_stays_null(
    store: ClickHouseStore, rollup: bool
) -> None:
    rows = _priced()
    store.insert_scores_sync(rows)
    found = {(r.scorer, r.version): r.cost_per_run for r in await version_sums(store, "service.version", 86400,
                                                                                rollup=rollup)}  # fmt: skip
    for scorer in ("correct", "tone"):
        known = [float(r.attributes[RUN_COST]) for r in rows if r.scorer == scorer and RUN_COST in r.attributes]
        assert found[(scorer, "1.5.0")] == pytest.approx(sum(known) / len(known), rel=1e-12)
        assert found[(scorer, "1.4.0")] is None


async def test_the_report_shows_cost_per_run_and_unknown(store: ClickHouseStore) -> None:
    store.insert_scores_sync(_priced())
    document = await compare_store(store, CompareRequest("service.version", "1.4.0", "1d"))
    old, new = document["scorers"][0]["versions"]
    assert old["cost_per_run"] is None and new["cost_per_run"] == pytest.approx(0.003, rel=1e-9)
    table = render(document, "table")
    assert "cost_per_run" in table and "unknown" in table and "0.003" in table
    csv_lines = render(document, "csv").splitlines()
    assert csv_lines[0].endswith("cost_per_run") and csv_lines[1].endswith(",")  # unknown: empty, not 0


async def test_the_migration_again_keeps_the_view_filling_the_cost(chdb_dsn: str, database_name: str) -> None:
    """0020 replaces the roll-up's view; run again (a crash before its record), scores still roll up their cost."""
    from spanscore.storage.connection import connect
    from spanscore.storage.schema.catalog import load_migrations

    store = ClickHouseStore(chdb_dsn, database_name)
    store.open()
    try:
        [this] = [m for m in load_migrations(database_name) if m.version == 20]
        client = connect(chdb_dsn, database_name)
        for statement in this.statements:
            client.command(statement)
        store.insert_scores_sync(_priced())
        rolled = await version_sums(store, "service.version", 86400)
        raw = await version_sums(store, "service.version", 86400, rollup=False)
        assert [r.cost_per_run is None for r in rolled] == [r.cost_per_run is None for r in raw] == [True, False] * 2
        known = [(a.cost_per_run, b.cost_per_run) for a, b in zip(rolled, raw, strict=True) if a.cost_per_run]
        assert all(a == pytest.approx(b, rel=1e-12) for a, b in known)
    finally:
        store.close()
