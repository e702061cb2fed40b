"""docs/schema.md is what scripts/schema_reference.py writes from the migrations, and every column has a meaning.

The tables and columns come from this test process's embedded store after every migration, as the script reads
them from its own throwaway store (#40 item 8: there was no column reference, and the obvious
``toStartOfHour(Timestamp)`` grouped scores by when they were scored).
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from spanscore.storage.schema.migrations import migrate
from spanscore.storage.schema.reference import Column, Table, schema_tables
from tests.scripts_loader import load_script
from tests.service_setup import new_database_name

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    return load_script("schema_reference")


@pytest.fixture(scope="module")
def built(engine: Any) -> tuple[str, list[Table]]:
    database = new_database_name()
    migrate(engine, database)
    return database, schema_tables(engine, database)


def test_every_table_and_column_has_a_meaning_and_the_committed_doc_is_current(built: tuple[str, list[Table]]) -> None:
    generator = _generator()
    _, tables = built
    entries = generator.load_descriptions()
    assert generator.problems(tables, entries) == []
    committed = (ROOT / "docs" / "schema.md").read_text(encoding="utf-8")
    stale = "docs/schema.md is stale: run python scripts/schema_reference.py"
    assert committed == generator.render(tables, entries), stale
    for table in tables:
        assert f"\n## {table.name}\n" in committed
        assert all(f"| `{column.name}` |" in committed or f"`{column.name}`" in committed for column in table.columns)


def test_a_column_without_a_meaning_and_a_meaning_without_a_column_are_both_named(
    built: tuple[str, list[Table]],
) -> None:
    generator = _generator()
    _, tables = built
    scores = next(table for table in tables if table.name == "scores")
    grown = [
        Table(t.name, t.engine, t.sorting_key, (*t.columns, Column("NewColumn", "String", ""))) if t is scores else t
        for t in tables
    ]
    entries = generator.load_descriptions()
    entries["worst_runs"] = {**entries["worst_runs"], "columns": {**entries["worst_runs"]["columns"], "Gone": "x"}}
    found = generator.problems(grown, entries)
    assert found == [
        "scores.NewColumn has no meaning in schema-descriptions.yaml",
        "schema-descriptions.yaml describes worst_runs.Gone, which the migrations do not create",
    ]


def test_the_doc_groups_scores_by_the_runs_time_and_its_example_runs(
    built: tuple[str, list[Table]], engine: Any
) -> None:
    database, _ = built
    text = (ROOT / "docs" / "schema.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```sql\n(.*?)```", text, re.DOTALL)
    assert "toStartOfHour(RunTimestamp)" in example and "toStartOfHour(Timestamp)" not in example
    # A score written now for a run 5 hours ago (a backfill) lands in the run's hour, not the current one.
    engine.command(
        f"INSERT INTO {database}.scores (ScoreId, Timestamp, RunTimestamp, Scorer, Score, Status, Version) "
        "VALUES ('s1', now64(9), now64(9) - INTERVAL 5 HOUR, 'demo', 0.5, 'ok', 1)"
    )
    rows = engine.query(example.replace("FROM scores", f"FROM {database}.scores")).result_rows
    (hour, scorer, mean, count) = rows[0]
    assert (scorer, mean, count) == ("demo", 0.5, 1)
    now_hour = engine.query("SELECT toStartOfHour(now())").result_rows[0][0]
    assert (now_hour - hour).total_seconds() >= 4 * 3600
    scores_row = next(line for line in text.splitlines() if line.startswith("| [`scores`]"))
    assert "`RunTimestamp`" in scores_row.split("|")[3]
