"""Migration 0017 upgrades a store in place: unpriced judge cost becomes NULL in scores, roll-ups and views.

Before it, a score whose judge calls litellm could not price stored ``CostUsd`` 0 (or only the priced part)
with the attribute ``judge.cost = unknown``, and every cost view summed that as money (#40 item 6).
"""

from __future__ import annotations

import dataclasses

from spanscore.storage.connection import connect
from spanscore.storage.schema.catalog import load_migrations
from spanscore.storage.schema.migrations import migrate
from spanscore.storage.scores import SCORE_COLUMNS, to_columns
from tests.unit.storage.test_rollups import make_scores


def test_an_existing_store_upgrades_unknown_cost_to_null_everywhere(chdb_dsn: str, database_name: str) -> None:
    client = connect(chdb_dsn, database_name)
    db = database_name
    [this] = [m for m in load_migrations(db) if m.name == "unknown_cost"]
    migrate(client, db, upto=this.version - 1)
    rows = [row for row in make_scores(300, seed=41) if row.judge_model]
    unpriced = [
        dataclasses.replace(row, judge_model="local/unpriced", cost_usd=0.0, attributes={"judge.cost": "unknown"})
        for row in rows[:60]
    ]
    priced = rows[60:]

    def insert(batch: list) -> None:  # type: ignore[type-arg]
        client.insert(f"{db}.scores", to_columns(batch), column_names=list(SCORE_COLUMNS), column_oriented=True)

    insert(unpriced + priced)
    assert migrate(client, db)[0] == this.version

    def query(sql: str) -> list[tuple]:  # type: ignore[type-arg]
        return list(client.query(sql).result_rows)

    def daily() -> dict[str, tuple]:  # type: ignore[type-arg]
        sql = (
            f"SELECT JudgeModel, if(sum(UnpricedScores) > 0, NULL, sum(PricedCostUsd)), sum(UnpricedScores), "
            f"sum(Scores) FROM {db}.judge_cost_daily GROUP BY JudgeModel"
        )
        return {model: rest for model, *rest in query(sql)}  # type: ignore[misc]

    stored = dict(query(f"SELECT isNull(CostUsd), count() FROM {db}.scores FINAL GROUP BY 1"))
    assert stored == {1: len(unpriced), 0: len(priced)}, stored
    expected = sum(row.cost_usd or 0.0 for row in priced)
    before = daily()
    assert before["local/unpriced"][:2] == [None, len(unpriced)], before
    assert before["judge-1"][0] == round(expected, 6) or abs(before["judge-1"][0] - expected) < 1e-9, before
    assert before["judge-1"][1] == 0

    # After the upgrade, new rows come with NULL themselves, and the roll-ups count them once.
    insert([dataclasses.replace(unpriced[0], cost_usd=None, trace_id="f" * 32, score_id="new-unpriced")])
    # The migration again, as after a crash before its record: nothing is counted twice.
    for statement in this.statements:
        client.command(statement)
    after = daily()
    assert after["local/unpriced"][:2] == [None, len(unpriced) + 1], after
    assert after["judge-1"] == before["judge-1"], after
