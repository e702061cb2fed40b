"""The packaged migrations: numbered ``NNNN_name.sql`` files in this package, read in order.

Each file may hold several statements separated by ``;`` at the end of a line. ``{rollup_...}`` and
``{dashboard_...}`` placeholders take statements written out in Python (``rollups.py``, ``dashboard_views.py``),
where the same DDL repeats for several grains or for two migrations; ``{run_columns}`` the columns two tables
share (``run_columns.py``).
Both the single-node path (``migrations.migrate``) and the cluster rewrite (``cluster``) start from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from spanscore.storage.schema import (
    dashboard_views,
    metric_tables,
    rollups,
    run_columns,
    unknown_cost,
    version_rollup,
)

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FRAGMENT = re.compile(r"\{((?:rollup|dashboard|run|metrics)_[a-z_]+)\}")
FRAGMENTS = {
    **rollups.FRAGMENTS,
    **dashboard_views.FRAGMENTS,
    **run_columns.FRAGMENTS,
    **metric_tables.FRAGMENTS,
    **unknown_cost.FRAGMENTS,
    **version_rollup.FRAGMENTS,
}


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


def load_migrations(database: str) -> list[Migration]:
    """Read the packaged migration files, with ``{database}`` filled in."""
    if not _IDENTIFIER.match(database):
        raise ValueError(f"storage.database must be a plain identifier, got {database!r}")
    found: list[Migration] = []
    for entry in resources.files("spanscore.storage.schema").iterdir():
        match = _NAME.match(entry.name)
        if not match:
            continue
        text = _FRAGMENT.sub(lambda m: FRAGMENTS[m.group(1)], entry.read_text(encoding="utf-8"))
        text = text.replace("{database}", database)
        statements = tuple(s.strip() for s in re.split(r";\s*$", text, flags=re.MULTILINE) if _has_sql(s))
        found.append(Migration(int(match.group(1)), match.group(2), statements))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration versions: {versions}")
    return found


def _has_sql(chunk: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in chunk.splitlines())
