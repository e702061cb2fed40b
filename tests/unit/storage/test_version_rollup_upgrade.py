"""A store made by the first release of migration 0018 (#41), upgraded: the roll-up then lacked CostState, W4
and N4, which 0020 adds. Later releases create them in 0018 itself, so a fresh store never takes 0020's ALTER
path; this test builds the first release's table and view and upgrades it the way an operator's store is.

Scores rolled up before the upgrade have no sum(w^4): a window over them must fall back to Kish's degrees of
freedom (and say cost unknown), never read the missing sums as 0; scores after it roll up everything.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from spanscore.alerting.version_report import CompareRequest, compare_store
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.connection import connect
from spanscore.storage.reads.compare import version_sums
from spanscore.storage.schema.catalog import load_migrations
from spanscore.storage.schema.migrations import migrate
from spanscore.storage.schema.version_rollup import ADDED_IN_0020, TABLE
from spanscore.storage.scores import RUN_COST, SCORE_COLUMNS, to_columns
from tests.unit.storage.test_compare_store import _rows


def _first_0018(database: str) -> list[str]:
    """0018's statements without the columns 0020 added: a line per column in the table and in the SELECT."""
    [migration] = [m for m in load_migrations(database) if m.version == 18]
    added = "|".join(ADDED_IN_0020)
    column = re.compile(rf"^\s+({added}) |\sAS ({added}),?$")
    statements = []
    for statement in migration.statements:
        kept = "\n".join(line for line in statement.splitlines() if not column.search(line))
        statements.append(re.sub(r",\n(\)|FROM )", r"\n\1", kept))
    assert all(name not in s for s in statements for name in ("W4", "CostState"))
    return statements


async def test_a_store_from_the_first_0018_upgrades_and_compares_like_the_raw_scores(
    chdb_dsn: str, database_name: str
) -> None:
    rows = [
        dataclasses.replace(r, attributes={**r.attributes, RUN_COST: str(0.001 * (i % 7))}) if i // 2 % 2 else r
        for i, r in enumerate(_rows()[0])
    ]
    before, after = rows[: len(rows) // 2], rows[len(rows) // 2 :]
    client = connect(chdb_dsn, database_name)
    migrate(client, database_name, upto=17)
    for statement in _first_0018(database_name):
        client.command(statement)
    client.command(f"INSERT INTO {database_name}.schema_migrations (Version, Name) VALUES (18, 'first release')")
    client.insert(f"{database_name}.scores", to_columns(before), column_names=list(SCORE_COLUMNS),
                  column_oriented=True)  # fmt: skip
    store = ClickHouseStore(chdb_dsn, database_name)
    store.open()  # the upgrade: 0019, 0020 (ALTER ... ADD COLUMN, the view replaced), and on
    try:
        names = {str(n) for n in client.query(f"SELECT name FROM system.columns WHERE database = '{database_name}'"
                                              f" AND table = '{TABLE}'").result_columns[0]}  # fmt: skip
        assert set(ADDED_IN_0020) <= names
        store.insert_scores_sync(after)
        rolled = await version_sums(store, "service.version", 86400)
        raw = await version_sums(store, "service.version", 86400, rollup=False)
        assert [(r.scorer, r.version) for r in rolled] == [(r.scorer, r.version) for r in raw]
        for a, b in zip(rolled, raw, strict=True):
            assert (a.n, a.binary) == (b.n, b.binary)
            for field in ("w", "w2", "wy", "w2y", "w2y2"):
                assert getattr(a, field) == pytest.approx(getattr(b, field), rel=1e-9), field
            assert a.w4 is None  # half the scores were rolled up without it: Kish stands in, not a partial sum
            assert b.w4 is not None
            # the cost of the runs rolled up before 0020 is unknown to the roll-up: the newer half's average
            newer = [
                float(r.attributes[RUN_COST])
                for r in after
                if (r.scorer, r.attributes["version.service.version"]) == (a.scorer, a.version)
                and RUN_COST in r.attributes
            ]
            assert a.cost_per_run == pytest.approx(sum(newer) / len(newer), rel=1e-12)
        document = await compare_store(store, CompareRequest("service.version", "1.4.0", "1d"))
        for scorer in document["scorers"]:
            for version in scorer["versions"]:
                assert version["n"] > 0 and version["verdict"] in (None, "better", "worse", "no_difference", "too_few")
    finally:
        store.close()
