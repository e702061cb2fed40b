"""``spanscore config check --dsn``: connect, name every missing schema part, table, grant and setting.

These run against the embedded engine (chDB): the same client and the same SQL as a server, with one user
that holds every grant. No ClickHouse server runs on this machine, so the server-only parts (another
user's grants and profile) are driven here by giving a chDB connection the settings a server profile
would give (``readonly``, the query limits, ``async_insert``); grant parsing has its own tests
(tests/unit/storage/test_access_grants.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spanscore.cli.commands import main
from spanscore.storage.connection import connect
from spanscore.storage.query.guard import QueryLimits, engine_settings
from spanscore.storage.schema.catalog import load_migrations
from spanscore.storage.schema.migrations import migrate
from spanscore.storage.schema.state import expected_tables
from spanscore.storage.server_check import check_server

LATEST = load_migrations("x")[-1].version
"""The schema version this spanscore expects: the newest migration's."""


@pytest.fixture
def admin(chdb_dsn: str) -> Iterator[Any]:
    """A plain connection; it makes sure the embedded store exists (a database of its own)."""
    client = connect(chdb_dsn, "default")
    client.command("CREATE DATABASE IF NOT EXISTS check_dsn_store")
    try:
        yield client
    finally:
        client.close()


def _config(tmp_path: Path, database: str, extra: str = "") -> str:
    path = tmp_path / "c.yaml"
    data = (tmp_path / "data").as_posix()
    path.write_text(f"storage: {{data_dir: {data}, database: {database}{extra}}}\n")
    return str(path)


def _check(tmp_path: Path, database: str, dsn: str, *more: str) -> int:
    return main(["config", "check", "-c", _config(tmp_path, database), "--dsn", dsn, *more])


def test_a_fresh_database_is_named_missing_and_left_as_it_was(
    admin: Any, chdb_dsn: str, database_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _check(tmp_path, database_name, chdb_dsn) == 1
    out, err = capsys.readouterr()
    assert (
        f"missing: schema: database {database_name} has no spanscore schema, this spanscore expects version {LATEST}"
        in out
    )
    assert "migrations not applied: 1 otel_traces, 2 otel_logs" in out and "12 scored_run_service" in out
    assert "run `spanscore migrate` with the owner user's DSN" in out
    tables = expected_tables(database_name)
    assert f"missing: tables: {len(tables)} of {len(tables)} missing in {database_name}: {', '.join(tables)}" in out
    assert "things missing" not in err and "as the owner user: 2 thing(s) missing" in err
    assert str(admin.command(f"EXISTS DATABASE {database_name}")).strip() == "0"


def test_after_migrate_the_check_passes_and_says_what_it_checked(
    admin: Any, chdb_dsn: str, database_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    migrate(admin, database_name)
    assert _check(tmp_path, database_name, chdb_dsn) == 0
    out = capsys.readouterr().out
    assert "server: embedded ClickHouse (chDB) 26." in out and "user default, checked as the owner user" in out
    assert f"schema: database {database_name} at version {LATEST}, as this spanscore expects" in out
    assert f"tables: all {len(expected_tables(database_name))} tables and views of the schema are in" in out
    assert f"grants: the owner user holds CREATE DATABASE ON {database_name}.*" in out and "KILL QUERY ON *.*" in out
    assert f"store {chdb_dsn}: OK as the owner user" in out and "missing:" not in out


def test_a_schema_behind_and_a_lost_table_are_named(
    admin: Any, chdb_dsn: str, database_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    migrate(admin, database_name, upto=10)
    admin.command(f"DROP TABLE {database_name}.scored_runs")
    assert _check(tmp_path, database_name, chdb_dsn) == 1
    out = capsys.readouterr().out
    assert (
        f"database {database_name} at version 10, this spanscore expects version {LATEST}; migrations not applied: "
        in out
    )
    assert "11 rollup_targets, 12 scored_run_service" in out
    expected = len(expected_tables(database_name))
    # dropped, two that migration 14 creates, those of migration 16 (OTLP metrics and their roll-ups) and 18's
    # version roll-up
    metrics = "otel_metrics_sum, otel_metrics_gauge, otel_metrics_histogram, otel_metrics_exponential_histogram"
    rollups = "genai_usage_1m, genai_usage_1m_mv, genai_usage_1h, genai_usage_1h_mv, genai_usage_minute"
    lost = f"scored_runs, alert_deliveries, fleet_rule_sets, {metrics}, otel_metrics_summary, {rollups}"
    lost += ", genai_usage_hour, scores_versions_1h, scores_versions_1h_mv, fleet_heartbeats, scoring_claims"
    assert f"missing: tables: 18 of {expected} missing in {database_name}: {lost}" in out


def test_the_query_role_on_the_embedded_engine_passes_and_says_why(
    admin: Any, chdb_dsn: str, database_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    migrate(admin, database_name)
    assert _check(tmp_path, database_name, chdb_dsn, "--role", "query") == 0
    out = capsys.readouterr().out
    assert f"grants: the query user holds SELECT ON {database_name}.*, SHOW TABLES ON {database_name}.*" in out
    assert "the embedded engine has no users; the query API's own connections run with readonly=1" in out


def test_a_bad_dsn_or_an_empty_path_is_refused_and_nothing_is_created(
    tmp_path: Path, database_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _check(tmp_path, database_name, "mysql://db:3306/") == 2
    assert "--dsn mysql://db:3306/: must start with chdb:///" in capsys.readouterr().err
    empty = tmp_path / "nothing-here"
    assert _check(tmp_path, database_name, f"chdb://{empty.as_posix()}") == 1
    assert "no embedded store there (nothing was created)" in capsys.readouterr().err
    assert not empty.exists()


def _as_server_user(chdb_dsn: str, database: str, settings: dict[str, Any], role: str) -> list[str]:
    """Check a connection whose settings are what a server user's profile would give it."""
    client = connect(chdb_dsn, database, settings)
    try:
        return check_server(client, database, role=role, embedded=False).problems  # type: ignore[arg-type]
    finally:
        client.close()


def test_a_query_user_that_can_write_or_has_other_limits_is_named(
    admin: Any, chdb_dsn: str, database_name: str
) -> None:
    migrate(admin, database_name)
    sent = engine_settings(QueryLimits())
    assert _as_server_user(chdb_dsn, database_name, sent, "query") == []
    writable = _as_server_user(chdb_dsn, database_name, {k: v for k, v in sent.items() if k != "readonly"}, "query")
    assert [p.split(":")[0] for p in writable] == ["read-only"] and "readonly=0" in writable[0]
    other = _as_server_user(chdb_dsn, database_name, {**sent, "max_threads": 8, "max_execution_time": 30}, "query")
    assert [p.split(" is ")[0] for p in other] == ["query limit: max_execution_time", "query limit: max_threads"]
    assert "(storage.query_max_execution_time_s)" in other[0] and "(fixed in spanscore)" in other[1]


def test_an_owner_that_cannot_write_or_acknowledges_early_is_named(
    admin: Any, chdb_dsn: str, database_name: str
) -> None:
    migrate(admin, database_name)
    assert _as_server_user(chdb_dsn, database_name, {}, "owner") == []
    early = _as_server_user(chdb_dsn, database_name, {"async_insert": 1, "wait_for_async_insert": 0}, "owner")
    assert len(early) == 1 and "async_insert=1 with wait_for_async_insert=0" in early[0]
    read_only = _as_server_user(chdb_dsn, database_name, {"readonly": 1}, "owner")
    assert len(read_only) == 1 and "the owner user has readonly=1: it cannot migrate or insert" in read_only[0]


_HOLDER = """
import sys
from spanscore.storage.connection import connect
client = connect(sys.argv[1], "default")
client.command("CREATE DATABASE IF NOT EXISTS held")
print("ready", flush=True)
sys.stdin.read()
"""


def test_an_embedded_store_another_process_holds_is_named_not_opened(
    tmp_path: Path, database_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"chdb://{(tmp_path / 'held').as_posix()}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, store], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        assert _check(tmp_path, database_name, store) == 1
        assert "the embedded store is open in another process (a running `spanscore serve`?)" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_with_a_cluster_configured_the_local_tables_and_the_cluster_grant_are_checked(
    admin: Any, chdb_dsn: str, database_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A single-node schema where a cluster's is expected lacks every ``_local`` table; the engine has no cluster."""
    migrate(admin, database_name)
    path = _config(tmp_path, database_name, ", cluster: spanscore_cluster")
    assert main(["config", "check", "-c", path, "--dsn", chdb_dsn]) == 1
    out = capsys.readouterr().out
    local = [name for name in expected_tables(database_name, "spanscore_cluster") if name.endswith("_local")]
    assert "otel_traces_local" in local and "scores_local" in local
    assert f"missing in {database_name}: {', '.join(local)}" in out
    assert "CLUSTER ON *.*" in out.split("grants: the owner user holds ")[1]


def test_a_query_user_allowed_fewer_queries_at_once_than_one_replica_runs_is_named(
    admin: Any, chdb_dsn: str, database_name: str
) -> None:
    migrate(admin, database_name)
    sent = engine_settings(QueryLimits())
    enough = _as_server_user(chdb_dsn, database_name, {"max_concurrent_queries_for_user": 3, **sent}, "query")
    assert enough == []
    short = _as_server_user(chdb_dsn, database_name, {"max_concurrent_queries_for_user": 2, **sent}, "query")
    assert len(short) == 1 and "max_concurrent_queries_for_user is 2 but one replica runs up to 3" in short[0]
