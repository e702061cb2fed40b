"""The schema as the migrations build it: every table with its engine and columns, read from ``system``.

docs/schema.md is generated from this (``scripts/schema_reference.py``) rather than from the migration
text, so what it lists is what ClickHouse holds after every ALTER, view and placeholder has been applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class Querier(Protocol):
    def query(self, sql: str, parameters: dict[str, Any] | None = None) -> Any: ...


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    default: str
    """``DEFAULT expr`` or ``MATERIALIZED expr`` as declared; empty when none."""


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    engine: str
    sorting_key: str
    columns: tuple[Column, ...]


def schema_tables(client: Querier, database: str) -> list[Table]:
    """Every table and view of ``database`` (by name) with its columns in their declared order."""
    tables = client.query(
        "SELECT name, engine, sorting_key FROM system.tables WHERE database = {db:String} ORDER BY name",
        parameters={"db": database},
    ).result_rows
    rows = client.query(
        "SELECT table, name, type, default_kind, default_expression FROM system.columns "
        "WHERE database = {db:String} ORDER BY table, position",
        parameters={"db": database},
    ).result_rows
    columns: dict[str, list[Column]] = {}
    for table, name, kind, default_kind, expression in rows:
        default = f"{default_kind} {expression}" if default_kind else ""
        columns.setdefault(str(table), []).append(Column(str(name), str(kind), default))
    return [Table(str(name), str(engine), str(key), tuple(columns.get(str(name), ()))) for name, engine, key in tables]
