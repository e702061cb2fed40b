"""Every query spanscore ships (Grafana panels, variables, alert rules, docs examples) passes the query API's check.

The allowlist refuses what it does not name, so a function a dashboard or the docs rely on must be on
it: these run each one through ``query_sync``, the path of ``POST /api/v1/query``, not spanscore's own
trusted connection.
"""

from __future__ import annotations

import json
import re

import yaml

from spanscore.storage.clickhouse import ClickHouseStore
from tests.deploy.test_deploy import DASHBOARD, DEPLOY, dashboard_panels, grafana_to_sql, seeded

__all__ = ["seeded"]  # the fixture, imported for pytest


def shipped_queries() -> list[str]:
    panels = [grafana_to_sql(t["rawSql"]) for panel in dashboard_panels() for t in panel["targets"]]
    listed = json.loads(DASHBOARD.read_text(encoding="utf-8"))["templating"]["list"]
    variables = [v["query"] for v in listed if v["type"] == "query"]  # a textbox's "query" is its default text
    alerting = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "alerting" / "spanscore.yaml").read_text())
    rules = [
        item["model"]["rawSql"]
        for group in alerting["groups"]
        for rule in group["rules"]
        for item in rule["data"]
        if "rawSql" in item["model"]
    ]
    doc = (DEPLOY.parent / "docs" / "dashboards.md").read_text(encoding="utf-8")
    docs = re.findall(r"```sql\n(.*?)```", doc, re.DOTALL)
    return panels + variables + rules + docs


def test_every_shipped_query_passes_the_query_api(seeded: ClickHouseStore) -> None:
    queries = shipped_queries()
    assert len(queries) >= 15
    for sql in queries:
        assert seeded.query_sync(sql, "csv"), sql  # raises PermanentError naming what is refused
