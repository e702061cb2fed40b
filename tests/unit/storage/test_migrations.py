"""Migrations that have shipped keep their exact SQL, however their text is assembled."""

from __future__ import annotations

import hashlib

import pytest

from spanscore.storage.schema.catalog import load_migrations
from spanscore.storage.schema.rollups import FRAGMENTS, MEASURES

# sha256 of each shipped migration's statements (database "spanscore"), joined by "\n;\n".
# A store applies a migration once; editing one makes new stores differ from upgraded ones.
SHIPPED = {
    1: "1ba1efdf0bd2420e87a5f2bc9eee3b97518d40665062772644205ebfd957e784",
    2: "3127c3c0e445d0d3b4b08eb7fc79c32bc89340bf296760f34b178b1012d899b2",
    3: "2f703efa1059f8e161491933f401005ec3e50399342667d15dc6205bb1ed4c34",
    4: "06f541d9b889fbee1ba5b761a209bde622eeb5afd75053da3073e2e9aa44f6f6",
    5: "5cf46ad3b678c58e85fcff45c660d4b43bb6257f9e19f4534f1be5ee8fc5845e",
    6: "d00c801698e7f563729ef45c162a3f204cfc199025d6a84d9e49712329898aa8",
    7: "d0225e3cdec88595d24d95b303d2d58ba15dca25e45bd74aa079f138544a7b7e",
    8: "8e1872287e10de1ef52b739b3b79e749fc09b96fb34e6a68b0f992caefd5f420",
    9: "0007c0c5d2dc37e6f8a95669d48f7b52ce9ddfe6c218f2840f4d2d7ed4eec0ac",
    10: "6ecdefaf558a4bebe8e877f3dc14e501e07f91b811e7875662e37fe9eae0b934",
    11: "643dbea882dc2b9be24041ebbf88ab17774fc2b595523234d191b7e59fd260cf",
    12: "1baba914c8ecaa1fff8202ae1e08146743e54bec534971dcec875f411bb8fd11",
    13: "8009426901b5880c23110fbba5169a1fa2add12b13259bd7b570cfd3937ef118",
}


def fingerprint(statements: tuple[str, ...]) -> str:
    return hashlib.sha256("\n;\n".join(statements).encode()).hexdigest()


@pytest.mark.parametrize("version", sorted(SHIPPED))
def test_migrations_are_frozen(version: int) -> None:
    migration = next(m for m in load_migrations("spanscore") if m.version == version)
    assert fingerprint(migration.statements) == SHIPPED[version], (
        f"migration {version} ({migration.name}) no longer renders the SQL it shipped with: "
        "change the schema in a new migration instead"
    )


def test_the_rollup_statements_land_in_migration_4() -> None:
    statements = next(m for m in load_migrations("db") if m.version == 4).statements
    heads = [next(line for line in s.splitlines() if line and not line.startswith("--")) for s in statements]
    assert heads[:7] == [
        "CREATE TABLE IF NOT EXISTS db.scores_1m (",
        "CREATE TABLE IF NOT EXISTS db.scores_1h (",
        "INSERT INTO db.scores_1m",
        "INSERT INTO db.scores_1h",
        "CREATE MATERIALIZED VIEW IF NOT EXISTS db.scores_1m_mv",
        "CREATE MATERIALIZED VIEW IF NOT EXISTS db.scores_1h_mv",
        "CREATE VIEW IF NOT EXISTS db.score_trend_hourly AS",
    ]
    text = "\n".join(statements)
    assert "{" not in text  # every placeholder was filled
    for name, state_type, expression in MEASURES:
        assert text.count(f"    {name} {state_type},") + text.count(f"    {name} {state_type}\n") == 2, name
        assert text.count(f"    {expression} AS {name}") == 4, name  # 2 grains x (backfill + view)
    assert {"rollup_tables", "rollup_backfills", "rollup_views"} <= set(FRAGMENTS)


def test_migration_11_splits_the_rollups_by_target() -> None:
    statements = next(m for m in load_migrations("db") if m.version == 11).statements
    heads = [next(line for line in s.splitlines() if line and not line.startswith("--")) for s in statements]
    assert heads[:6] == [
        "ALTER TABLE db.scores_1m ADD COLUMN IF NOT EXISTS Target LowCardinality(String) AFTER JudgeModel, "
        "MODIFY ORDER BY (Scorer, Rule, ServiceName, AgentName, Model, JudgeModel, Bucket, Target)",
        "ALTER TABLE db.scores_1h ADD COLUMN IF NOT EXISTS Target LowCardinality(String) AFTER JudgeModel, "
        "MODIFY ORDER BY (Scorer, Rule, ServiceName, AgentName, Model, JudgeModel, Bucket, Target)",
        "DROP VIEW IF EXISTS db.scores_1m_mv",
        "CREATE MATERIALIZED VIEW IF NOT EXISTS db.scores_1m_mv",
        "DROP VIEW IF EXISTS db.scores_1h_mv",
        "CREATE MATERIALIZED VIEW IF NOT EXISTS db.scores_1h_mv",
    ]
    text = "\n".join(statements)
    assert "{" not in text
    for _, _, expression in MEASURES:
        assert text.count(expression) == 2  # one view per grain


def test_the_dashboard_views_are_declared_once_for_0004_and_again_by_target_for_0011() -> None:
    """One declaration of each dashboard view (#27 duplicates): 0011 is 0004's view set grouped by target too."""
    from spanscore.storage.reads.dashboard_series import COVERAGE_SQL
    from spanscore.storage.schema.dashboard_views import COVERAGE_COUNTS, snake
    from spanscore.storage.schema.dashboard_views import FRAGMENTS as VIEWS

    names = ("score_trend_hourly", "worst_runs", "coverage_daily", "judge_cost_daily", "scores_with_spans")
    first, by_target = (
        [
            "\n".join(line for line in view.splitlines() if not line.startswith("--"))
            for view in VIEWS[key].split(";\n\n")
        ]
        for key in ("dashboard_views", "dashboard_target_views")
    )
    for name, created, replaced in zip(names, first, by_target, strict=True):
        assert created.startswith(f"CREATE VIEW IF NOT EXISTS {{database}}.{name} AS") and "Target" not in created
        assert replaced.startswith(f"CREATE OR REPLACE VIEW {{database}}.{name} AS") and "Target" in replaced
    texts = {m.version: "\n".join(m.statements) for m in load_migrations("db")}
    assert "CREATE VIEW IF NOT EXISTS db.coverage_daily" in texts[4]
    assert "CREATE OR REPLACE VIEW db.coverage_daily" in texts[11]
    for column, condition in COVERAGE_COUNTS:  # the dashboard's read counts what the view counts
        assert f"countIf({condition}) AS {column}" in texts[4] and f"AS {snake(column)}" in COVERAGE_SQL
