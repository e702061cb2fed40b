"""Every row the intake stored, in one canonical text: what ``bench.stored_rows`` compares byte for byte.

A change to the write path (decode, limits, insert format, intake tables and views) must not change one stored
value. The dump is the proof: each intake table's columns and types, then its rows as JSON lines sorted by
their bytes, so that neither insert order nor part layout nor merges change it, while any value, any map order,
any missing or extra row does. Strings are written as the engine holds them (no UTF-8 repair).
"""

from __future__ import annotations

from typing import Any

INTAKE_PREFIXES = ("otel_", "genai_usage_")
"""Tables the span, log and metric intake write (directly or through a view): spans, their trace-id lookup,
log records, metric points and the GenAI usage roll-ups. Scores and runs are the scorers' and not dumped."""

VARYING_COLUMNS: dict[str, tuple[str, ...]] = {}
"""Columns whose value legitimately differs from one run to the next (none so far: every intake column comes
from what was sent)."""


def intake_tables(client: Any, database: str) -> list[str]:
    """The database's stored intake tables (not views, not the Null intake table), by name."""
    result = client.query(
        "SELECT name FROM system.tables WHERE database = {database:String} AND engine LIKE '%MergeTree%' "
        "AND startsWith(name, '.inner') = 0 ORDER BY name",
        parameters={"database": database},
    )
    return [str(row[0]) for row in result.result_rows if str(row[0]).startswith(INTAKE_PREFIXES)]


def _columns(client: Any, database: str, table: str) -> list[tuple[str, str]]:
    result = client.query(
        "SELECT name, type FROM system.columns WHERE database = {database:String} AND table = {table:String} "
        "ORDER BY position",
        parameters={"database": database, "table": table},
    )
    return [(str(name), str(kind)) for name, kind in result.result_rows]


def dump_table(client: Any, database: str, table: str) -> bytes:
    """One table: a header line with its columns and types, then every row as a JSON line, sorted."""
    varying = set(VARYING_COLUMNS.get(table, ()))
    columns = [(name, kind) for name, kind in _columns(client, database, table) if name not in varying]
    selected = ", ".join(f"`{name}`" for name, _ in columns)
    raw = client.raw_query(
        f"SELECT {selected} FROM `{database}`.`{table}`",
        fmt="JSONEachRow",
        settings={"output_format_json_quote_64bit_integers": 1, "output_format_json_validate_utf8": 0},
    )
    rows = sorted(line for line in bytes(raw).split(b"\n") if line)
    header = f"## {table} ({len(rows)} rows): " + ", ".join(f"{name} {kind}" for name, kind in columns)
    return b"\n".join([header.encode(), *rows]) + b"\n"


def dump_intake(client: Any, database: str) -> bytes:
    """Every intake table of ``database``, in name order."""
    return b"".join(dump_table(client, database, table) for table in intake_tables(client, database))
