"""What a ClickHouse user lacks to run spanscore: schema, tables, grants and settings, read without changing anything.

``spanscore config check --dsn`` runs this against the user a DSN names, in one of two roles
(deploy/clickhouse): the owner, which migrates and writes, and the query user, which the engine
keeps read-only for the query API. Every missing thing is named, so an operator fixes all of them
in one pass instead of meeting them one failed statement at a time. The embedded engine has one
user with every grant and no server-side profiles; the same checks run there and pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from clickhouse_connect.driver.exceptions import DatabaseError

from spanscore.storage.access import (
    CLUSTER_REQUIREMENTS,
    OWNER_REQUIREMENTS,
    QUERY_REQUIREMENTS,
    missing,
    needless_for_reading,
    parse_grants,
)
from spanscore.storage.query.guard import QueryLimits, engine_settings
from spanscore.storage.schema.catalog import load_migrations
from spanscore.storage.schema.state import expected_tables, missing_migrations, missing_tables

Role = Literal["owner", "query"]

_LIMIT_KEYS = {
    "max_execution_time": "storage.query_max_execution_time_s",
    "max_memory_usage": "storage.query_max_memory_bytes",
    "max_result_rows": "storage.query_max_result_rows",
    "max_result_bytes": "storage.query_max_result_bytes",
}


@dataclass
class ServerReport:
    """What was checked (one line each), what is missing (each a reason to exit non-zero), and advice."""

    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_server(
    client: Any,
    database: str,
    *,
    role: Role,
    embedded: bool,
    cluster: str | None = None,
    limits: QueryLimits | None = None,
    readers: int = 2,
) -> ServerReport:
    """Check the connected user for ``role`` over ``database``; ``client`` carries the user's own settings only.

    ``readers`` is ``storage.query_readers``: one replica runs that many API queries at once, plus the dashboard's.
    """
    report = ServerReport()
    version = str(client.command("SELECT version()")).strip()
    user = str(client.command("SELECT currentUser()")).strip()
    engine = "embedded ClickHouse (chDB)" if embedded else "ClickHouse server"
    report.checked.append(f"server: {engine} {version}, user {user}, checked as the {role} user")
    _check_schema(client, database, cluster, report)
    _check_grants(client, database, role, cluster, report, embedded)
    if role == "owner":
        _check_owner_settings(client, report)
    elif embedded:
        report.checked.append(
            "read-only: the embedded engine has no users; the query API's own connections run with readonly=1"
        )
    else:
        _check_query_settings(client, limits or QueryLimits(), readers, report)
    return report


def _check_schema(client: Any, database: str, cluster: str | None, report: ServerReport) -> None:
    migrations = load_migrations(database)
    names = {m.version: m.name for m in migrations}
    expected = migrations[-1].version
    gaps = missing_migrations(client, database)
    recorded = [version for version in names if version not in gaps]
    if not gaps:
        report.checked.append(f"schema: database {database} at version {expected}, as this spanscore expects")
    else:
        at = f"at version {max(recorded)}" if recorded else "has no spanscore schema"
        listed = ", ".join(f"{version} {names[version]}" for version in gaps)
        report.problems.append(
            f"schema: database {database} {at}, this spanscore expects version {expected}; migrations not "
            f"applied: {listed} (run `spanscore migrate` with the owner user's DSN)"
        )
    absent = missing_tables(client, database, cluster)
    total = len(expected_tables(database, cluster))
    if absent:
        report.problems.append(f"tables: {len(absent)} of {total} missing in {database}: {', '.join(absent)}")
    else:
        report.checked.append(f"tables: all {total} tables and views of the schema are in {database}")


def _check_grants(
    client: Any, database: str, role: Role, cluster: str | None, report: ServerReport, embedded: bool
) -> None:
    lines = _show_grants(client)
    grants = parse_grants(lines)
    requirements = OWNER_REQUIREMENTS if role == "owner" else QUERY_REQUIREMENTS
    if role == "owner" and cluster:
        requirements += CLUSTER_REQUIREMENTS
    gaps = missing(grants, requirements, database)
    for gap in gaps:
        report.problems.append(f"grant missing: {gap}")
    if not gaps:
        held = ", ".join(
            f"{r.privilege} ON {database + '.*' if r.scope == 'database' else '*.*'}" for r in requirements
        )
        report.checked.append(f"grants: the {role} user holds {held}")
    # The embedded engine's one user holds everything; there is no other user to give the query API.
    if role == "query" and not embedded and (extra := needless_for_reading(grants)):
        report.warnings.append(
            f"the query user also holds {', '.join(extra)}: readonly=1 stops writes, but grants are the second "
            "lock and SOURCES-type grants let a query reach files, URLs and other servers; revoke them "
            "(deploy/clickhouse/query-user.sql)"
        )


def _show_grants(client: Any) -> list[str]:
    """The user's grants with its roles' merged in (``FINAL``); older servers know only plain ``SHOW GRANTS``."""
    try:
        rows = client.query("SHOW GRANTS FINAL").result_rows
    except DatabaseError:
        rows = client.query("SHOW GRANTS").result_rows
    return [str(row[0]) for row in rows]


def _settings(client: Any, names: list[str]) -> dict[str, str]:
    columns = ", ".join(f"toString(getSetting('{name}'))" for name in names)
    row = client.query(f"SELECT {columns}").result_rows[0]
    # Bool settings read back as true/false on newer servers, 1/0 on older ones.
    return {
        name: {"true": "1", "false": "0"}.get(str(value), str(value)) for name, value in zip(names, row, strict=True)
    }


def _check_owner_settings(client: Any, report: ServerReport) -> None:
    """The owner writes and runs DDL, and an acknowledged insert must be a stored one."""
    values = _settings(client, ["readonly", "async_insert", "wait_for_async_insert"])
    before = len(report.problems)
    if values["readonly"] != "0":
        report.problems.append(
            f"settings: the owner user has readonly={values['readonly']}: it cannot migrate or insert "
            "(give it deploy/clickhouse/owner-user.sql's profile)"
        )
    if values["async_insert"] != "0" and values["wait_for_async_insert"] == "0":
        report.problems.append(
            "settings: the owner user has async_insert=1 with wait_for_async_insert=0: the server answers an "
            "insert before storing it, so spanscore would acknowledge spans a server crash loses "
            "(set async_insert=0 or wait_for_async_insert=1 in its profile)"
        )
    if len(report.problems) == before:
        report.checked.append("settings: the owner user may write, and its inserts return once stored")


def _check_query_settings(client: Any, limits: QueryLimits, readers: int, report: ServerReport) -> None:
    """Read-only by the engine, with the limits spanscore sends (a read-only user may not change any setting)."""
    wanted = {name: value for name, value in engine_settings(limits).items() if name != "readonly"}
    values = _settings(client, ["readonly", "max_concurrent_queries_for_user", *wanted])
    if values["readonly"] == "0":
        report.problems.append(
            "read-only: the query user can write (readonly=0): give it a profile with readonly = 1 CONST "
            "(deploy/clickhouse/query-user.sql); the query API refuses to start with it otherwise"
        )
    else:
        report.checked.append(f"read-only: the query user has readonly={values['readonly']} from its profile")
    differing = [name for name, value in wanted.items() if not _same(values[name], value)]
    for name in differing:
        source = _LIMIT_KEYS.get(name, "fixed in spanscore")
        report.problems.append(
            f"query limit: {name} is {values[name]} for the query user but spanscore sends {wanted[name]} "
            f"({source}); a read-only user cannot change a setting, so API queries would be refused: make the "
            "profile and the config agree"
        )
    if not differing:
        report.checked.append(f"query limits: the profile matches what spanscore sends ({', '.join(wanted)})")
    _check_concurrency(int(float(values["max_concurrent_queries_for_user"])), readers + 1, report)


def _check_concurrency(allowed: int, per_replica: int, report: ServerReport) -> None:
    """Every replica's readers and dashboard share the user's limit on queries at once (0 is no limit)."""
    if allowed and allowed < per_replica:
        report.problems.append(
            f"query concurrency: max_concurrent_queries_for_user is {allowed} but one replica runs up to "
            f"{per_replica} queries at once (storage.query_readers + the dashboard's reader): the engine would "
            f"refuse the rest (TOO_MANY_SIMULTANEOUS_QUERIES); set it to at least {per_replica} x replicas"
        )
    else:
        shown = allowed or "no limit"
        report.checked.append(
            f"query concurrency: max_concurrent_queries_for_user {shown}, one replica uses up to {per_replica} "
            "(it must cover every replica sharing the user)"
        )


def _same(actual: str, wanted: object) -> bool:
    try:
        return float(actual) == float(str(wanted))
    except ValueError:
        return actual == str(wanted)
