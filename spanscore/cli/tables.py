"""Query results as text tables, for ``spanscore query`` and the reports."""

from __future__ import annotations

import json

from spanscore.printable import printable


def format_table(result: dict[str, object], source: str = "") -> str:
    """Render the engine's JSON output as an aligned text table; ``source`` names who answered, in the last line."""
    meta = result.get("meta") or []
    names = [str(col["name"]) for col in meta] if isinstance(meta, list) else []
    data = result.get("data") or []
    rows = [[_cell(row.get(name)) for name in names] for row in data] if isinstance(data, list) else []
    widths = [max([len(name)] + [len(r[i]) for r in rows]) for i, name in enumerate(names)]
    line = "  ".join(name.ljust(widths[i]) for i, name in enumerate(names))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) for row in rows]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''}{f', from {source}' if source else ''})")
    return "\n".join(out) + "\n"


def _cell(value: object) -> str:
    """One table cell on one line, with the sender's control characters escaped (docs/security.md)."""
    if isinstance(value, str):
        return printable(value)
    return printable(json.dumps(value, ensure_ascii=False))
