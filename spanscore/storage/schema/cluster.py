"""Cluster mode: the packaged migrations rewritten for a sharded, replicated ClickHouse cluster.

Naming: every MergeTree-family table ``X`` of the single-node schema becomes two tables,
both created ``ON CLUSTER``:

* ``X_local`` holds the rows on each shard, with the Replicated form of the engine
  (``ReplacingMergeTree(Version)`` -> ``ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}',
  '{replica}', Version)``); ``{shard}``, ``{replica}``, ``{database}`` and ``{table}`` are server macros.
* ``X`` is a ``Distributed`` table over ``X_local``, so every query, insert and view that
  names ``X`` keeps working unchanged, and spanscore's writers and readers need no change.

Tables with a ``TraceId`` column are sharded by ``cityHash64(TraceId)``: a trace's spans, logs, scores and
decisions land on one shard. That keeps ReplacingMergeTree's de-duplication correct (a run score's id is
derived from its trace id, so copies meet on one shard) and makes the score-to-span join shard-local. A
session's score and decision are the exception: their id is the session's but their ``TraceId`` is the latest
turn's, so migration 0015 re-creates the ``scores`` and ``score_decisions`` Distributed tables with
``SESSION_KEY``, which shards a session's rows by the session. The roll-ups have no trace id and are sharded
at random; their states merge at read time.

Materialized views fire on the shard that receives the insert, so they read from and write to
``_local`` tables; a view over an unsharded intake table (``ENGINE = Null``) writes to the
Distributed table instead, so its rows are still sharded by trace id. Plain views read the
``Distributed`` tables, except the right side of a JOIN, which reads ``_local`` (the left side
is already sent to each shard; a distributed right side would be a double-distributed join,
which ClickHouse refuses by default).

``schema_migrations`` is created by ``migrate()`` itself, not by a migration file; see
``bootstrap_statements`` for its cluster form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from spanscore.storage.schema.catalog import Migration

ZOOKEEPER_PATH = "/clickhouse/tables/{shard}/{database}/{table}"
REPLICA_NAME = "{replica}"

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CREATE = re.compile(
    r"^CREATE\s+(?:OR\s+REPLACE\s+)?(?P<kind>TABLE|MATERIALIZED\s+VIEW|VIEW|DATABASE)\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)",
    re.IGNORECASE,
)
_ENGINE = re.compile(r"ENGINE\s*=\s*(?P<family>[A-Za-z]*MergeTree)(?:\((?P<args>[^)]*)\))?")
_DROP = re.compile(
    r"^DROP\s+(?:VIEW|TABLE)\s+(?:IF\s+EXISTS\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*)",
    re.IGNORECASE,
)
_SORTING_KEY = re.compile(r",\s*MODIFY\s+ORDER\s+BY\s*\([^()]*\)", re.IGNORECASE)
_NON_REPLICATED_WINDOW = re.compile(r"\bnon_replicated_(?=deduplication_window\b)", re.IGNORECASE)
_SESSION_SHARDED = re.compile(r"\bMODIFY\s+COMMENT\s+'sharded by session:", re.IGNORECASE)
SESSION_KEY = "cityHash64(if(Target = 'session', RunId, TraceId))"
"""A session's rows (``Target = 'session'``, ``RunId`` the session id) on one shard; every other row by trace."""
_ALTER = re.compile(r"^ALTER\s+TABLE\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


def sharded_tables(statements: Iterable[str]) -> set[str]:
    """Qualified names (``db.table``) of the MergeTree-family tables the statements create."""
    found: set[str] = set()
    for statement in map(strip_comments, statements):
        match = _CREATE.match(statement)
        if match and match.group("kind").upper() == "TABLE" and _ENGINE.search(statement):
            found.add(match.group("name"))
    return found


def cluster_ddl(statement: str, cluster: str, sharded: set[str]) -> tuple[str, ...]:
    """One single-node statement as the statements that do the same on ``cluster``.

    ``sharded`` is the set of ``db.table`` names that become ``_local`` + Distributed pairs
    (from ``sharded_tables`` over all migrations, since a view may name an older table).
    A CREATE TABLE gives two statements; everything else gives one.
    """
    if not _IDENTIFIER.match(cluster):
        raise ValueError(f"cluster name must be a plain identifier, got {cluster!r}")
    statement = strip_comments(statement)
    create = _CREATE.match(statement)
    if create:
        kind = re.sub(r"\s+", " ", create.group("kind").upper())
        if kind == "TABLE" and create.group("name") in sharded:
            return _sharded_table(statement, create, cluster)
        body = _on_cluster(statement, create, cluster)
        if kind == "MATERIALIZED VIEW":
            return (_to_local(body, sharded),)
        if kind == "VIEW":
            return (_join_local(body, sharded),)
        return (body,)
    alter = _ALTER.match(statement)
    if alter and alter.group("name") in sharded:
        return _alter_both(statement, alter, cluster)
    drop = _DROP.match(statement)
    if drop:
        # Only views are dropped by migrations (a view replaced by a new version); tables never are.
        return (f"{statement[: drop.end('name')]} ON CLUSTER {cluster}{statement[drop.end('name') :]}",)
    # INSERT ... SELECT (backfills) goes through the Distributed tables as written.
    return (statement,)


def cluster_migration(migration: Migration, cluster: str, sharded: set[str]) -> Migration:
    """A migration with each statement rewritten for ``cluster``; same version and name."""
    statements = tuple(out for statement in migration.statements for out in cluster_ddl(statement, cluster, sharded))
    return Migration(migration.version, migration.name, statements)


def cluster_migrations(migrations: list[Migration], cluster: str) -> list[Migration]:
    """All migrations rewritten for ``cluster`` (pass ``load_migrations(database)``)."""
    sharded = sharded_tables(s for m in migrations for s in m.statements)
    return [cluster_migration(m, cluster, sharded) for m in migrations]


def strip_comments(statement: str) -> str:
    """Drop whole-line ``--`` comments, so each statement starts with its keyword."""
    return "\n".join(line for line in statement.splitlines() if not line.lstrip().startswith("--")).strip()


def bootstrap_statements(database: str, cluster: str) -> tuple[str, ...]:
    """The database and ``schema_migrations`` on every node, for a cluster-aware ``migrate()``.

    The record of applied versions is replicated in one shard-independent path, so every
    node sees the same schema version and a migration runs once for the cluster.
    """
    if not _IDENTIFIER.match(database) or not _IDENTIFIER.match(cluster):
        raise ValueError(f"database and cluster must be plain identifiers, got {database!r}, {cluster!r}")
    return (
        f"CREATE DATABASE IF NOT EXISTS {database} ON CLUSTER {cluster}",
        f"CREATE TABLE IF NOT EXISTS {database}.schema_migrations ON CLUSTER {cluster} "
        "(Version UInt32, Name String, AppliedAt DateTime64(3) DEFAULT now64(3)) "
        "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/{database}/{table}', '{replica}') "
        "ORDER BY Version",
    )


def _on_cluster(statement: str, create: re.Match[str], cluster: str) -> str:
    end = create.end("name")
    return f"{statement[:end]} ON CLUSTER {cluster}{statement[end:]}"


def _sharded_table(statement: str, create: re.Match[str], cluster: str) -> tuple[str, str]:
    name = create.group("name")
    local = f"{name}_local"
    head = f"{statement[: create.start('name')]}{local} ON CLUSTER {cluster}"
    local_statement = _ENGINE.sub(_replicated_engine, head + statement[create.end("name") :], count=1)
    key = "cityHash64(TraceId)" if re.search(r"^\s*TraceId\s", statement, re.MULTILINE) else "rand()"
    return local_statement, _distributed(name, cluster, key)


def _distributed(name: str, cluster: str, key: str, *, replace: bool = False) -> str:
    """The Distributed table over ``name``'s local table; ``replace`` swaps one in place (it holds no rows)."""
    database, table = name.split(".", 1)
    create = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE IF NOT EXISTS"
    return (
        f"{create} {name} ON CLUSTER {cluster} AS {name}_local "
        f"ENGINE = Distributed({cluster}, {database}, {table}_local, {key})"
    )


def _replicated_engine(match: re.Match[str]) -> str:
    args = [f"'{ZOOKEEPER_PATH}'", f"'{REPLICA_NAME}'"]
    if match.group("args") and match.group("args").strip():
        args.append(match.group("args").strip())
    return f"ENGINE = Replicated{match.group('family')}({', '.join(args)})"


def _to_local(statement: str, sharded: set[str]) -> str:
    """Point every sharded table a materialized view names (TO and FROM) at its local table.

    A view over a sharded table fires on the shard that holds the rows, so it writes locally.
    A view over an intake table (``ENGINE = Null``, not sharded) fires on the node that took
    the insert: it keeps writing to the Distributed table, which routes each row to its shard.
    """
    source = re.search(r"\bFROM\s+([A-Za-z_][\w]*\.[A-Za-z_]\w*)", statement)
    if source is None or source.group(1) not in sharded:
        return statement
    for name in sorted(sharded, key=len, reverse=True):
        statement = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", f"{name}_local", statement)
    return statement


def _join_local(statement: str, sharded: set[str]) -> str:
    """The right side of a JOIN in a plain view reads the shard's local table."""
    for name in sorted(sharded, key=len, reverse=True):
        statement = re.sub(rf"(\bJOIN\s+){re.escape(name)}(?!\w)", rf"\g<1>{name}_local", statement)
    return statement


def _alter_both(statement: str, alter: re.Match[str], cluster: str) -> tuple[str, ...]:
    """ALTERs go to the local table; column changes also to the Distributed one, which must match.

    A Distributed table has no sorting key: a ``MODIFY ORDER BY`` that comes with an added key
    column goes to the local table only. The local table is Replicated, whose insert deduplication
    window is ``replicated_deduplication_window`` (kept in Keeper, shared by the replicas): the
    single-node ``non_replicated_deduplication_window`` becomes that, the same size.
    """
    name = alter.group("name")
    rest = statement[alter.end("name") :]
    local = f"ALTER TABLE {name}_local ON CLUSTER {cluster}{_NON_REPLICATED_WINDOW.sub('replicated_', rest)}"
    if _SESSION_SHARDED.search(rest):
        return (local, _distributed(name, cluster, SESSION_KEY, replace=True))
    if re.search(r"\bCOLUMN\b", rest, re.IGNORECASE):
        return (local, f"ALTER TABLE {name} ON CLUSTER {cluster}{_SORTING_KEY.sub('', rest)}")
    return (local,)
