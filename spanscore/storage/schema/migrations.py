"""Versioned schema: numbered ``schema/NNNN_name.sql`` files applied once, in order.

Each file may hold several statements separated by ``;`` at the end of a line.
``{rollup_...}`` placeholders take statements written out in Python
(``schema/rollups.py``), where the same DDL repeats for several grains.
Applied versions are recorded in ``schema_migrations`` so a start on an existing
store only runs what is new; statements are written to be idempotent
(``IF NOT EXISTS``) so a crash between a statement and its record is harmless.
"""

from __future__ import annotations

import logging
import re
from typing import Protocol

from spanscore.storage.schema.catalog import load_migrations
from spanscore.storage.schema.cluster import bootstrap_statements, cluster_migrations

log = logging.getLogger(__name__)


class CommandRunner(Protocol):
    def command(self, sql: str) -> object: ...


def migrate(client: CommandRunner, database: str, upto: int | None = None, cluster: str | None = None) -> list[int]:
    """Create the database and apply every migration not yet recorded; return the versions applied.

    ``upto`` stops after that version (to build an older schema, e.g. in upgrade tests); None applies all.
    With ``cluster`` every statement runs ON CLUSTER, tables are Replicated with Distributed tables over
    them (see ``spanscore.storage.schema.cluster``).
    """
    migrations = load_migrations(database)
    if cluster:
        for statement in bootstrap_statements(database, cluster):
            client.command(statement)
        migrations = cluster_migrations(migrations, cluster)
    else:
        client.command(f"CREATE DATABASE IF NOT EXISTS {database}")
        client.command(
            f"CREATE TABLE IF NOT EXISTS {database}.schema_migrations "
            "(Version UInt32, Name String, AppliedAt DateTime64(3) DEFAULT now64(3)) "
            "ENGINE = ReplacingMergeTree ORDER BY Version"
        )
    applied_text = str(
        client.command(f"SELECT arrayStringConcat(groupArray(Version), ',') FROM {database}.schema_migrations FINAL")
    )
    applied = {int(v) for v in re.findall(r"\d+", applied_text)}
    done: list[int] = []
    for migration in migrations:
        if migration.version in applied or (upto is not None and migration.version > upto):
            continue
        log.info("applying migration version=%d name=%s", migration.version, migration.name)
        for statement in migration.statements:
            client.command(statement)
        client.command(
            f"INSERT INTO {database}.schema_migrations (Version, Name) VALUES ({migration.version}, '{migration.name}')"
        )
        done.append(migration.version)
    return done


def current_version(client: CommandRunner, database: str) -> int:
    return int(str(client.command(f"SELECT max(Version) FROM {database}.schema_migrations")))
