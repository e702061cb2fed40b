"""Which ClickHouse privileges spanscore's two server users need, and whether ``SHOW GRANTS`` gives them.

On a server spanscore runs as two users (deploy/clickhouse): an owner that applies the migrations
and writes, and a query user that the engine keeps read-only for the query API. A user short of a
grant works until the statement that needs it runs: a migration months later, a retention change
at the next start, the first abandoned query to cancel. ``spanscore config check --dsn`` reads the
user's own ``SHOW GRANTS`` and names what is missing before any of that happens.

``SHOW GRANTS`` prints the engine's canonical privilege names, grouped: a user granted ``ALTER``
holds ``ALTER TTL`` through it. ``ANCESTORS`` lists, for each privilege spanscore needs, the groups
that include it, as the engine's ``system.privileges.parent_group`` chains them (a test reads the
chains from the engine to keep this table true).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Scope = Literal["database", "global"]


@dataclass(frozen=True, slots=True)
class Requirement:
    """A privilege on spanscore's database (``db.*``) or on everything (``*.*``), and what needs it."""

    privilege: str
    scope: Scope
    why: str


OWNER_REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement("CREATE DATABASE", "database", "migrate creates the database"),
    Requirement("CREATE TABLE", "database", "migrations create tables"),
    Requirement("CREATE VIEW", "database", "migrations create views and materialized views"),
    Requirement("DROP VIEW", "database", "migrations replace views (CREATE OR REPLACE, DROP VIEW)"),
    Requirement("ALTER ADD COLUMN", "database", "migrations add columns"),
    Requirement("ALTER ORDER BY", "database", "migrations extend sorting keys"),
    Requirement("ALTER SETTINGS", "database", "migrations set deduplication windows"),
    Requirement("ALTER ADD PROJECTION", "database", "migration 0024 adds a projection of session turn keys"),
    Requirement("ALTER MATERIALIZE PROJECTION", "database", "migration 0024 builds it for rows already stored"),
    Requirement("ALTER TTL", "database", "storage.*_ttl_days sets table TTLs at start"),
    Requirement("INSERT", "database", "spans, logs, scores, decisions and scored runs are inserted"),
    Requirement("SELECT", "database", "reads and migration backfills"),
    Requirement("SHOW TABLES", "database", "the schema check (EXISTS TABLE)"),
    Requirement("KILL QUERY", "global", "cancelling a query API query whose client left (it runs as another user)"),
)
"""The owner user: migrations, retention, the write path (spool replay and dead-letter replay insert too)."""

CLUSTER_REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement("CLUSTER", "global", "storage.cluster runs every migration ON CLUSTER"),
)

QUERY_REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement("SELECT", "database", "the query API and the dashboard read spanscore's tables and views"),
    Requirement("SHOW TABLES", "database", "SHOW TABLES and EXISTS in API queries"),
)
"""The query user: reads only; ``readonly=1`` in its profile is what keeps it from writing."""

ANCESTORS: dict[str, tuple[str, ...]] = {
    "CREATE DATABASE": ("CREATE", "ALL"),
    "CREATE TABLE": ("CREATE", "ALL"),
    "CREATE VIEW": ("CREATE", "ALL"),
    "DROP VIEW": ("DROP", "ALL"),
    "ALTER ADD COLUMN": ("ALTER COLUMN", "ALTER TABLE", "ALTER", "ALL"),
    "ALTER ORDER BY": ("ALTER INDEX", "ALTER TABLE", "ALTER", "ALL"),
    "ALTER SETTINGS": ("ALTER TABLE", "ALTER", "ALL"),
    "ALTER ADD PROJECTION": ("ALTER PROJECTION", "ALTER TABLE", "ALTER", "ALL"),
    "ALTER MATERIALIZE PROJECTION": ("ALTER PROJECTION", "ALTER TABLE", "ALTER", "ALL"),
    "ALTER TTL": ("ALTER TABLE", "ALTER", "ALL"),
    "INSERT": ("ALL",),
    "SELECT": ("ALL",),
    "SHOW TABLES": ("SHOW", "ALL"),
    "KILL QUERY": ("ALL",),
    "CLUSTER": ("ALL",),
}
"""Each required privilege's enclosing groups, nearest first (``system.privileges.parent_group``)."""

WRITE_PRIVILEGES = ("INSERT", "ALTER", "CREATE", "DROP", "TRUNCATE", "OPTIMIZE", "UNDROP", "ALL", "SYSTEM")
"""Privilege names (and name prefixes) a read-only user has no use for."""

SOURCE_PRIVILEGES = frozenset(
    "SOURCES FILE URL REMOTE MONGO REDIS MYSQL POSTGRES SQLITE ODBC JDBC HDFS S3 HIVE AZURE KAFKA NATS RABBITMQ".split()
)
"""Grants that let a query reach files, URLs and other servers: a query API must not be a proxy."""

_ALIASES = {"ALL PRIVILEGES": "ALL"}
_NAME = r"(?:`(?:[^`\\]|\\.)*`|[A-Za-z0-9_*]+)"
_LINE = re.compile(
    rf"^(?P<kind>GRANT|REVOKE)\s+(?P<privileges>.+?)\s+ON\s+(?P<target>{_NAME}(?:\.{_NAME})?)\s+(?:TO|FROM)\s+\S",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Grant:
    """One privilege of one ``SHOW GRANTS`` line: granted or (partially) revoked on a target."""

    revoke: bool
    privilege: str
    database: str
    """``*`` for every database; may end in ``*`` (a prefix wildcard, ``GRANT ... ON db*.*``)."""
    table: str
    """``*`` for every table of the database; may end in ``*``."""
    columns: bool
    """Granted on some columns only (``SELECT(a, b)``)."""


def parse_grants(lines: Iterable[str]) -> list[Grant]:
    """The privileges ``SHOW GRANTS`` lines give and take; role assignments and blank lines are skipped.

    Forms (ClickHouse's GRANT and SHOW GRANTS documentation): ``GRANT p1, p2(col, ...) ON db.table TO u
    [WITH GRANT OPTION]``, targets ``*.*``, ``db.*``, ``db*.*``, ``db.t*``, ``db.table``, and partial
    revokes ``REVOKE p ON db.table FROM u``. ``REVOKE GRANT OPTION FOR`` takes only the right to grant.
    """
    found: list[Grant] = []
    for line in lines:
        match = _LINE.match(" ".join(line.split()))
        if match is None:
            continue  # "GRANT role1, role2 TO user" and anything else without a privilege target
        privileges = match.group("privileges")
        revoke = match.group("kind").upper() == "REVOKE"
        if revoke and re.match(r"GRANT\s+OPTION\s+FOR\b", privileges, re.IGNORECASE):
            continue
        database, _, table = match.group("target").partition(".")
        if not table:  # "ON *" or "ON name": engines, definers, named collections; no database-table target
            continue
        for name, columns in _split_privileges(privileges):
            found.append(Grant(revoke, name, _unquote(database), _unquote(table), columns))
    return found


def missing(grants: list[Grant], requirements: Iterable[Requirement], database: str) -> list[str]:
    """Each requirement the grants do not fully give, as ``PRIVILEGE ON target (why)``.

    Grants apply in order, as the statements would: ``SHOW GRANTS`` prints grants before partial revokes,
    and a script may start with ``REVOKE ALL`` before granting.
    """
    gaps: list[str] = []
    for requirement in requirements:
        names = {requirement.privilege, *ANCESTORS.get(requirement.privilege, ("ALL",))}
        target = f"{database}.*" if requirement.scope == "database" else "*.*"
        given = False
        taken: list[Grant] = []
        for grant in grants:
            if grant.privilege not in names:
                continue
            if not grant.revoke and _covers(grant, requirement.scope, database):
                given, taken = True, []
            elif grant.revoke and _covers(grant, requirement.scope, database):
                given, taken = False, []
            elif grant.revoke and _touches(grant, requirement.scope, database):
                taken.append(grant)
        if not given:
            gaps.append(f"{requirement.privilege} ON {target} ({requirement.why})")
        elif taken:
            revoked = ", ".join(f"{g.privilege} ON {g.database}.{g.table}" for g in taken)
            gaps.append(f"{requirement.privilege} ON {target} (partly revoked: {revoked}; {requirement.why})")
    return gaps


def needless_for_reading(grants: list[Grant]) -> list[str]:
    """Grants a read-only query user holds beyond reading: writes, DDL, and sources that reach outside."""
    extra: list[str] = []
    for grant in grants:
        if grant.revoke:
            continue
        writes = grant.privilege.startswith(WRITE_PRIVILEGES) or grant.privilege == "KILL QUERY"
        if writes or grant.privilege in SOURCE_PRIVILEGES:
            entry = f"{grant.privilege} ON {grant.database}.{grant.table}"
            if entry not in extra:
                extra.append(entry)
    return extra


def _covers(grant: Grant, scope: Scope, database: str) -> bool:
    """A grant gives the requirement on every table of the database (or on everything, for global ones)."""
    if grant.columns or grant.table != "*":
        return False
    if scope == "global":
        return grant.database == "*"
    return _matches(grant.database, database)


def _touches(grant: Grant, scope: Scope, database: str) -> bool:
    """A revoke takes away some of what the requirement needs."""
    return scope == "global" or _matches(grant.database, database)


def _matches(pattern: str, name: str) -> bool:
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return pattern == name


def _split_privileges(text: str) -> list[tuple[str, bool]]:
    """``SELECT(a, b), INSERT, ALTER TTL`` -> names, each with whether a column list limits it.

    A comma inside parentheses belongs to a column list, not between two privileges.
    """
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    result: list[tuple[str, bool]] = []
    for part in parts:
        name, paren, _ = part.strip().partition("(")
        canonical = " ".join(name.split()).upper()
        result.append((_ALIASES.get(canonical, canonical), bool(paren)))
    return result


def _unquote(name: str) -> str:
    if len(name) >= 2 and name.startswith("`") and name.endswith("`"):
        return re.sub(r"\\(.)", r"\1", name[1:-1])
    return name
