"""The dashboard address a notification links to: the alert's own view, not the dashboard's front page.

The dashboard keeps its view in the query string (``since``, ``scorer``, ``rule``, ``target``), so a link
that carries the alert's window, scorer and ``where`` opens what the alert watched. ``where: {source: x}``
selects the outside scores of that source, stored under the rule ``source:x``. The dashboard cannot narrow
by service, agent or model; those keys of ``where`` stay in the payload's ``where``.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode


def dashboard_link(base_url: str, scorer: str, window: str, where: Mapping[str, str]) -> str | None:
    """``<base>/dashboard/?since=...&scorer=...[&rule=...][&target=...]``; ``None`` without a base URL."""
    base = base_url.strip().rstrip("/")
    if not base:
        return None
    query = {"since": window, "scorer": scorer}
    rule = where.get("rule") or (f"source:{where['source']}" if where.get("source") else "")
    if rule:
        query["rule"] = rule
    if where.get("target"):
        query["target"] = where["target"]
    return f"{base}/dashboard/?{urlencode(query)}"
