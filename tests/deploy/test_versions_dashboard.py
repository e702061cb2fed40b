"""deploy/grafana/dashboards/spanscore-versions.json (#41): its queries pass the query API's check, run on the
schema, and give the same weighted means and intervals as ``spanscore report compare``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from spanscore.alerting.version_report import CompareRequest, compare_store
from spanscore.storage.clickhouse import ClickHouseStore
from tests.unit.storage.test_compare_store import _rows


@pytest.fixture
def store(chdb_dsn: str, database_name: str) -> Iterator[ClickHouseStore]:
    opened = ClickHouseStore(chdb_dsn, database_name)
    opened.open()
    try:
        yield opened
    finally:
        opened.close()


DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "dashboards" / "spanscore-versions.json"


def _sql(raw: str) -> str:
    sql = re.sub(r"\$__timeFilter\((\w+)\)", r"\1 >= now() - INTERVAL 1 DAY", raw)
    sql = sql.replace("${version_attribute}", "service.version")
    assert "$" not in sql, sql
    return sql


async def test_version_panels_agree_with_report_compare(store: ClickHouseStore) -> None:
    store.insert_scores_sync(_rows()[0])
    panels = json.loads(DASHBOARD.read_text("utf-8"))["panels"]
    table, series = (_sql(panel["targets"][0]["rawSql"]) for panel in panels)
    found = json.loads(store.query_sync(table, "json"))["data"]  # the guarded path the API's queries take
    assert json.loads(store.query_sync(series, "json"))["data"]
    document = await compare_store(store, CompareRequest("service.version", "1.4.0", "1d"))
    expected = {(s["scorer"], v["version"]): v for s in document["scorers"] for v in s["versions"]}
    assert {(row["Scorer"], row["version"]) for row in found} == set(expected)
    for row in found:
        want = expected[row["Scorer"], row["version"]]
        assert float(row["weighted_mean"]) == pytest.approx(want["mean"])
        assert float(row["n_eff"]) == pytest.approx(want["n_eff"])
        if row["Scorer"] == "tone":  # a score, not a pass rate: the same t interval (Satterthwaite df from sum w^4)
            assert float(row["ci_low"]) == pytest.approx(want["ci_low"], abs=1e-4)
