"""On a cluster every copy of a session's score and decision lands on one shard (#36, item 11).

A session score's id is fixed, but its ``TraceId`` is its latest turn's trace; sharded by ``TraceId``, 6 of 12
rescored sessions kept copies on 2 of 2 shards, which ``FINAL`` never collapses. The Distributed tables'
final sharding key (after every migration, as rewritten for a cluster) is evaluated by the engine on
rows as spanscore writes them, for 2 and 3 shards.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from spanscore.storage.schema.catalog import load_migrations
from spanscore.storage.schema.cluster import cluster_migrations

DB = "spanscore"


def final_keys() -> dict[str, str]:
    """Each Distributed table's sharding key as the last migration that (re)creates it leaves it."""
    keys = {}
    for migration in cluster_migrations(load_migrations(DB), "prod"):
        for statement in migration.statements:
            found = re.search(rf"ENGINE = Distributed\(prod, {DB}, (\w+)_local, (.+)\)$", statement)
            if found:
                keys[found.group(1)] = found.group(2)
    return keys


def shards(engine: Any, key: str, rows: list[tuple[str, str, str]], count: int) -> dict[str, set[int]]:
    """Session id -> the shards its rows (Target, RunId, TraceId) go to, by the engine's own hash."""
    values = ", ".join(f"('{target}', '{run}', '{trace}')" for target, run, trace in rows)
    sql = (
        f"SELECT RunId, groupUniqArray(({key}) % {count}) FROM "
        f"(SELECT c1 AS Target, c2 AS RunId, c3 AS TraceId FROM values({values})) GROUP BY RunId"
    )
    return {str(run): set(found) for run, found in engine.query(sql).result_rows}


@pytest.mark.parametrize("table", ["scores", "score_decisions"])
@pytest.mark.parametrize("count", [2, 3])
def test_every_copy_of_a_sessions_score_lands_on_one_shard(engine: Any, table: str, count: int) -> None:
    key = final_keys()[table]
    # 12 sessions, each scored after turns 1..3: the same session id, the latest turn's trace each time.
    rows = [("session", f"conv-{s}", f"{s:04x}{turn:028x}") for s in range(12) for turn in range(1, 4)]
    spread = shards(engine, key, rows, count)
    assert len(spread) == 12
    assert {run: found for run, found in spread.items() if len(found) > 1} == {}


def test_a_runs_rows_stay_on_their_traces_shard(engine: Any) -> None:
    """Run scores meet their spans on one shard: the key of a run's row is its trace's."""
    keys = final_keys()
    rows = [("run", f"run-{i}", f"{i:032x}") for i in range(20)]
    for table in ("scores", "score_decisions"):
        by_key = shards(engine, keys[table], rows, 3)
        by_trace = shards(engine, keys["otel_traces"], rows, 3)
        assert by_key == by_trace
