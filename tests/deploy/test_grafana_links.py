"""The Grafana dashboard: every panel that can be narrowed to a scorer is, and a worst run opens its run page.

#40 item 8: the worst-runs table had no link to the run page, and there was no scorer variable.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from spanscore.storage.schema.migrations import migrate
from spanscore.storage.schema.reference import schema_tables
from tests.service_setup import new_database_name

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "spanscore.json"


def _dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def columns(engine: Any) -> dict[str, set[str]]:
    database = new_database_name()
    migrate(engine, database)
    return {table.name: {column.name for column in table.columns} for table in schema_tables(engine, database)}


def test_a_scorer_variable_narrows_every_panel_whose_table_has_a_scorer(columns: dict[str, set[str]]) -> None:
    variables = {variable["name"]: variable for variable in _dashboard()["templating"]["list"]}
    scorer = variables["scorer"]
    assert (scorer["type"], scorer["multi"], scorer["includeAll"]) == ("query", True, True)
    assert re.search(r"SELECT DISTINCT Scorer FROM (\w+)", scorer["query"])
    narrowed = 0
    for panel in _dashboard()["panels"]:
        for target in panel["targets"]:
            (table,) = set(re.findall(r"\bFROM\s+(\w+)", target["rawSql"]))
            if "Scorer" in columns[table]:
                assert "Scorer IN (${scorer:singlequote})" in target["rawSql"], panel["title"]
                narrowed += 1
    assert narrowed >= 7


def _trace_links(panel: dict[str, Any]) -> list[dict[str, Any]]:
    overrides = panel["fieldConfig"]["overrides"]
    found = [
        link
        for override in overrides
        if override["matcher"] == {"id": "byName", "options": "TraceId"}
        for prop in override["properties"]
        if prop["id"] == "links"
        for link in prop["value"]
    ]
    return found


def test_each_table_of_runs_links_its_trace_id_to_the_run_page() -> None:
    variables = {variable["name"]: variable for variable in _dashboard()["templating"]["list"]}
    base = variables["spanscore_url"]
    assert base["type"] == "textbox" and base["query"] == "http://localhost:4319"  # compose publishes 4319
    tables = [panel for panel in _dashboard()["panels"] if panel["type"] == "table"]
    assert "Worst runs" in [panel["title"] for panel in tables]
    for panel in tables:
        (link,) = _trace_links(panel)
        sql = panel["targets"][0]["rawSql"]
        assert re.search(r"\bTraceId\b", sql) and re.search(r"\bSpanId\b", sql), panel["title"]
        expanded = (
            link["url"]
            .replace("${spanscore_url}", "http://localhost:4319")
            .replace("${__data.fields.TraceId}", "5b8aa5a2d2c872e8321cf37308d69df2")
            .replace("${__data.fields.SpanId}", "051581bf3cb55c13")
        )
        url = urlsplit(expanded)
        assert (url.scheme, url.netloc, url.path) == ("http", "localhost:4319", "/dashboard/run")
        query = parse_qs(url.query)
        assert query == {"trace": ["5b8aa5a2d2c872e8321cf37308d69df2"], "span": ["051581bf3cb55c13"]}
    # The run page the link opens reads exactly these parameters.
    page = (ROOT / "spanscore" / "server" / "static" / "run.js").read_text(encoding="utf-8")
    assert 'params.get("trace")' in page and 'params.get("span")' in page
