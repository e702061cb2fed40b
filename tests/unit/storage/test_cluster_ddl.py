"""Cluster DDL, checked as text for every packaged migration (no cluster is available here).

The embedded engine still parses each rewritten statement (EXPLAIN AST), so a typo in the
rewrite fails here rather than on someone's cluster.
"""

from __future__ import annotations

import re

import pytest

from spanscore.storage.connection import connect
from spanscore.storage.schema.catalog import Migration, load_migrations
from spanscore.storage.schema.cluster import (
    bootstrap_statements,
    cluster_ddl,
    cluster_migrations,
    sharded_tables,
    strip_comments,
)

DB = "spanscore"
CLUSTER = "prod"
PATH_AND_REPLICA = "'/clickhouse/tables/{shard}/{database}/{table}', '{replica}'"

EXPECTED_ENGINES = {
    "otel_traces": ("ReplicatedMergeTree", "cityHash64(TraceId)"),
    "otel_traces_trace_id_ts": ("ReplicatedMergeTree", "cityHash64(TraceId)"),
    "otel_logs": ("ReplicatedMergeTree", "cityHash64(TraceId)"),
    "scores": ("ReplicatedReplacingMergeTree", "cityHash64(TraceId)"),
    "score_decisions": ("ReplicatedReplacingMergeTree", "cityHash64(TraceId)"),
    "scored_runs": ("ReplicatedReplacingMergeTree", "cityHash64(TraceId)"),
    "scores_1m": ("ReplicatedAggregatingMergeTree", "rand()"),
    "scores_1h": ("ReplicatedAggregatingMergeTree", "rand()"),
    "alert_deliveries": ("ReplicatedMergeTree", "rand()"),
    "fleet_rule_sets": ("ReplicatedMergeTree", "rand()"),
    "fleet_heartbeats": ("ReplicatedMergeTree", "rand()"),
    "scoring_claims": ("ReplicatedMergeTree", "cityHash64(TraceId)"),
    "otel_metrics_sum": ("ReplicatedMergeTree", "rand()"),
    "otel_metrics_gauge": ("ReplicatedMergeTree", "rand()"),
    "otel_metrics_histogram": ("ReplicatedMergeTree", "rand()"),
    "otel_metrics_exponential_histogram": ("ReplicatedMergeTree", "rand()"),
    "otel_metrics_summary": ("ReplicatedMergeTree", "rand()"),
    "genai_usage_1m": ("ReplicatedAggregatingMergeTree", "rand()"),
    "genai_usage_1h": ("ReplicatedAggregatingMergeTree", "rand()"),
    "scores_versions_1h": ("ReplicatedAggregatingMergeTree", "rand()"),
}


@pytest.fixture(scope="module")
def migrations() -> list[Migration]:
    return load_migrations(DB)


@pytest.fixture(scope="module")
def rewritten(migrations: list[Migration]) -> list[Migration]:
    return cluster_migrations(migrations, CLUSTER)


def all_statements(migrations: list[Migration]) -> list[str]:
    return [statement for migration in migrations for statement in migration.statements]


def test_every_mergetree_table_is_found(migrations: list[Migration]) -> None:
    assert sharded_tables(all_statements(migrations)) == {f"{DB}.{table}" for table in EXPECTED_ENGINES}


def test_versions_and_names_are_kept(migrations: list[Migration], rewritten: list[Migration]) -> None:
    assert [(m.version, m.name) for m in rewritten] == [(m.version, m.name) for m in migrations]


def test_each_table_becomes_a_replicated_local_table_and_a_distributed_table(rewritten: list[Migration]) -> None:
    statements = all_statements(rewritten)
    for table, (engine, key) in EXPECTED_ENGINES.items():
        local = [s for s in statements if s.startswith(f"CREATE TABLE IF NOT EXISTS {DB}.{table}_local ON CLUSTER")]
        assert len(local) == 1, table
        args = PATH_AND_REPLICA + (", Version" if "Replacing" in engine else "")
        assert f"ENGINE = {engine}({args})" in local[0]
        distributed = (
            f"CREATE TABLE IF NOT EXISTS {DB}.{table} ON CLUSTER {CLUSTER} AS {DB}.{table}_local "
            f"ENGINE = Distributed({CLUSTER}, {DB}, {table}_local, {key})"
        )
        assert statements.count(distributed) == 1, table
        # The Distributed table comes right after its local table.
        assert statements.index(distributed) == statements.index(local[0]) + 1


def test_local_tables_keep_everything_but_name_and_engine(
    migrations: list[Migration], rewritten: list[Migration]
) -> None:
    originals = {
        match.group(1): strip_comments(s)
        for s in all_statements(migrations)
        if (match := re.search(rf"CREATE TABLE IF NOT EXISTS {DB}\.(\w+) \(", s))
    }
    for statement in all_statements(rewritten):
        match = re.match(rf"CREATE TABLE IF NOT EXISTS {DB}\.(\w+)_local ON CLUSTER {CLUSTER} \(", statement)
        if not match:
            continue
        original = originals[match.group(1)]
        undo = re.sub(r"_local ON CLUSTER \w+ \(", " (", statement, count=1)
        undo = re.sub(r"ENGINE = Replicated(\w+)\('[^']*', '\{replica\}'(?:, )?([^)]*)\)", r"ENGINE = \1(\2)", undo)
        assert undo.replace("()", "") == original.replace("()", "")


def test_no_statement_keeps_an_unreplicated_engine(rewritten: list[Migration]) -> None:
    for statement in all_statements(rewritten):
        for engine in re.findall(r"ENGINE\s*=\s*(\w+)", statement):
            # Null intake tables hold no rows; their view routes rows through a Distributed table.
            assert engine.startswith(("Replicated", "Distributed", "Null")), statement[:120]


def test_every_create_runs_on_the_cluster(migrations: list[Migration], rewritten: list[Migration]) -> None:
    creates = [s for s in all_statements(rewritten) if s.startswith("CREATE")]
    assert creates
    for statement in creates:
        assert re.match(
            rf"CREATE (?:[A-Z ]+ IF NOT EXISTS|OR REPLACE (?:VIEW|TABLE)) {DB}\.\w+ ON CLUSTER {CLUSTER}\b", statement
        ), statement[:100]
    original_creates = [s for s in all_statements(migrations) if strip_comments(s).lstrip().startswith("CREATE")]
    resharded = 2  # migration 14 re-creates the scores and score_decisions Distributed tables
    assert len(creates) == len(original_creates) + len(EXPECTED_ENGINES) + resharded


def test_materialized_views_read_and_write_local_tables(rewritten: list[Migration]) -> None:
    views = [s for s in all_statements(rewritten) if s.startswith("CREATE MATERIALIZED VIEW")]
    # the roll-ups' two views are created again with Target (migration 11) and with unpriced counts (the
    # unknown-cost migration); two GenAI roll-ups (the metrics migration); the versions' roll-up (migration 18),
    # created again with cost and sum(w^4) (migration 20)
    assert len(views) == 12
    intake = [v for v in views if "_intake_mv" in v]
    assert len(intake) == 1 and f"TO {DB}.otel_traces\n" in intake[0] and "_local" not in intake[0]
    views = [v for v in views if v not in intake]
    for view in views:
        for name in re.findall(rf"\b(?:TO|FROM)\s+{DB}\.(\w+)", view):
            assert name.endswith("_local"), (name, view[:100])
    mvs = {re.search(r"VIEW IF NOT EXISTS \S+\.(\w+)", v).group(1): v for v in views}  # type: ignore[union-attr]
    assert "Target" in mvs["scores_1h_mv"] and "Target" in mvs["scores_1m_mv"]  # the later version wins
    assert f"TO {DB}.scores_1h_local" in mvs["scores_1h_mv"]
    assert f"FROM {DB}.scores_local\n" in mvs["scores_1h_mv"]
    assert f"TO {DB}.otel_traces_trace_id_ts_local" in mvs["otel_traces_trace_id_ts_mv"]
    assert f"TO {DB}.genai_usage_1m_local" in mvs["genai_usage_1m_mv"]
    assert f"FROM {DB}.otel_metrics_histogram_local\n" in mvs["genai_usage_1m_mv"]
    assert f"TO {DB}.scores_versions_1h_local" in mvs["scores_versions_1h_mv"]
    assert f"FROM {DB}.scores_local\n" in mvs["scores_versions_1h_mv"]


def test_plain_views_read_distributed_tables_but_join_locally(rewritten: list[Migration]) -> None:
    views = {
        match.group(1): s
        for s in all_statements(rewritten)
        if (match := re.match(rf"CREATE (?:VIEW IF NOT EXISTS|OR REPLACE VIEW) {DB}\.(\w+) ON CLUSTER", s))
    }
    assert set(views) == {
        "score_events", "span_events", "score_trend_hourly", "worst_runs", "coverage_daily", "judge_cost_daily",
        "scores_with_spans", "genai_usage_minute", "genai_usage_hour",
    }  # fmt: skip
    assert f"FROM {DB}.scores FINAL" in views["worst_runs"]
    assert f"FROM {DB}.scores_1h)\n" in views["score_trend_hourly"]
    assert f"FROM {DB}.score_decisions FINAL" in views["coverage_daily"]
    assert f"FROM {DB}.scores AS s FINAL\nANY LEFT JOIN {DB}.otel_traces_local AS t" in views["scores_with_spans"]
    for name, view in views.items():
        if name != "scores_with_spans":
            assert "_local" not in view, name


def test_backfills_go_through_the_distributed_tables(migrations: list[Migration], rewritten: list[Migration]) -> None:
    inserts = [strip_comments(s) for s in all_statements(migrations) if "INSERT INTO" in s]
    # the roll-ups' history (migration 4), their unpriced scores (migration 17), the versions' history (18)
    assert len(inserts) == 5
    assert [s for s in all_statements(rewritten) if s.startswith("INSERT")] == inserts


def test_alters_go_to_local_tables_and_column_changes_to_both() -> None:
    sharded = {f"{DB}.scores"}
    assert cluster_ddl(
        f"ALTER TABLE {DB}.scores MODIFY TTL toDateTime(RunTimestamp) + INTERVAL 3 DAY", "c", sharded
    ) == (f"ALTER TABLE {DB}.scores_local ON CLUSTER c MODIFY TTL toDateTime(RunTimestamp) + INTERVAL 3 DAY",)
    assert cluster_ddl(f"ALTER TABLE {DB}.scores ADD COLUMN IF NOT EXISTS Tag String", "c", sharded) == (
        f"ALTER TABLE {DB}.scores_local ON CLUSTER c ADD COLUMN IF NOT EXISTS Tag String",
        f"ALTER TABLE {DB}.scores ON CLUSTER c ADD COLUMN IF NOT EXISTS Tag String",
    )


def test_a_new_sorting_key_column_reaches_the_distributed_table_without_the_key() -> None:
    sharded = {f"{DB}.scores_1h"}
    statement = f"ALTER TABLE {DB}.scores_1h ADD COLUMN IF NOT EXISTS T String AFTER Rule, MODIFY ORDER BY (Rule, T)"
    assert cluster_ddl(statement, "c", sharded) == (
        f"ALTER TABLE {DB}.scores_1h_local ON CLUSTER c ADD COLUMN IF NOT EXISTS T String AFTER Rule, "
        "MODIFY ORDER BY (Rule, T)",
        f"ALTER TABLE {DB}.scores_1h ON CLUSTER c ADD COLUMN IF NOT EXISTS T String AFTER Rule",
    )


def test_dropped_views_are_dropped_on_the_cluster() -> None:
    assert cluster_ddl(f"DROP VIEW IF EXISTS {DB}.scores_1h_mv", "c", set()) == (
        f"DROP VIEW IF EXISTS {DB}.scores_1h_mv ON CLUSTER c",
    )


def test_rejects_a_cluster_name_that_is_not_an_identifier() -> None:
    with pytest.raises(ValueError, match="cluster name"):
        cluster_ddl(f"CREATE VIEW IF NOT EXISTS {DB}.v AS SELECT 1", "prod; DROP", set())


def test_bootstrap_creates_database_and_a_replicated_migration_record() -> None:
    database, table = bootstrap_statements(DB, CLUSTER)
    assert database == f"CREATE DATABASE IF NOT EXISTS {DB} ON CLUSTER {CLUSTER}"
    assert table.startswith(f"CREATE TABLE IF NOT EXISTS {DB}.schema_migrations ON CLUSTER {CLUSTER} ")
    assert "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/{database}/{table}', '{replica}')" in table


def test_every_rewritten_statement_parses(chdb_dsn: str, rewritten: list[Migration]) -> None:
    client = connect(chdb_dsn, "default")
    statements = all_statements(rewritten) + list(bootstrap_statements(DB, CLUSTER))
    for statement in statements:
        client.command(f"EXPLAIN AST {statement}")  # raises on a syntax error
    with pytest.raises(Exception, match="Syntax error"):
        client.command("EXPLAIN AST CREATE TABLE x ON CLUSTER ENGINE = ")


def test_every_replicated_table_keeps_the_insert_deduplication_window(rewritten: list[Migration]) -> None:
    """Replays are exactly once on a cluster too: each local table's window is the Replicated engine's own."""
    statements = all_statements(rewritten)
    assert not [s for s in statements if "non_replicated_deduplication_window" in s]
    latest = {}
    for statement in statements:
        found = re.match(
            r"ALTER TABLE (\S+) ON CLUSTER prod MODIFY SETTING replicated_deduplication_window = (\d+)$", statement
        )
        if found:
            latest[found.group(1)] = int(found.group(2))
    # The fleet's records (migrations 14, 19, 21) are written straight, never replayed from a spool.
    fleet_records = ("alert_deliveries", "fleet_rule_sets", "fleet_heartbeats", "scoring_claims")
    replayed = [t for t in EXPECTED_ENGINES if t not in fleet_records]
    assert latest == {f"{DB}.{table}_local": 10_000 for table in replayed}
