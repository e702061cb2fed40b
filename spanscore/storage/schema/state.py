"""Whether a database's schema is what this version of spanscore expects, without changing it.

Replicas of one deployment start with ``storage.migrate: false``: one
``spanscore migrate`` run (a Kubernetes Job, a compose one-shot service) brings
the schema up, and each replica only checks here that it did, instead of N
replicas racing through the same DDL at the same moment. The CLI uses the same
check so that reading a store never creates one.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from spanscore.errors import ConfigError
from spanscore.storage.schema.catalog import load_migrations
from spanscore.storage.schema.cluster import cluster_migrations, strip_comments
from spanscore.storage.schema.migrations import CommandRunner


class Querier(Protocol):
    def query(self, sql: str, parameters: dict[str, Any] | None = None) -> Any: ...


def missing_migrations(client: CommandRunner, database: str) -> list[int]:
    """Versions of the packaged migrations that the database has not recorded (all of them for a new one)."""
    expected = [migration.version for migration in load_migrations(database)]
    if str(client.command(f"EXISTS TABLE {database}.schema_migrations")).strip() != "1":
        return expected
    recorded = str(
        client.command(f"SELECT arrayStringConcat(groupArray(Version), ',') FROM {database}.schema_migrations FINAL")
    )
    applied = {int(version) for version in recorded.split(",") if version.strip()}
    return [version for version in expected if version not in applied]


def require_current_schema(client: CommandRunner, database: str) -> None:
    """Raise ``ConfigError`` saying how to migrate when the schema is missing or behind."""
    missing = missing_migrations(client, database)
    if missing:
        state = "has no spanscore schema" if len(missing) == len(load_migrations(database)) else "is behind"
        raise ConfigError(
            f"storage: database {database} {state} (migrations {missing[0]}..{missing[-1]} not applied) and "
            f"storage.migrate is false; run `spanscore migrate -c <config>` once (the migrate Job or compose "
            f"service does), then start the service"
        )


_CREATED = re.compile(
    r"^CREATE\s+(?:OR\s+REPLACE\s+)?(?:TABLE|MATERIALIZED\s+VIEW|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    r"[A-Za-z_][A-Za-z0-9_]*\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)",
    re.IGNORECASE,
)


def expected_tables(database: str, cluster: str | None = None) -> list[str]:
    """Every table and view the packaged migrations create (with their ``_local`` twins on a cluster), in order."""
    migrations = load_migrations(database)
    if cluster:
        migrations = cluster_migrations(migrations, cluster)
    names = ["schema_migrations"]
    for migration in migrations:
        for statement in migration.statements:
            match = _CREATED.match(strip_comments(statement))
            if match and match.group("name") not in names:
                names.append(match.group("name"))
    return names


def missing_tables(client: Querier, database: str, cluster: str | None = None) -> list[str]:
    """The tables and views of this spanscore's schema that the database does not hold (all, when it is absent)."""
    present = {
        str(row[0])
        for row in client.query(
            "SELECT name FROM system.tables WHERE database = {database:String}", parameters={"database": database}
        ).result_rows
    }
    return [name for name in expected_tables(database, cluster) if name not in present]
