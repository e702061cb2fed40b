"""Issue #30 item 7: the dashboard keeps its scales and its state.

Seeded like ``test_dashboard.py`` (three scored traces, two judge scorers, decisions), plus outside scores
posted through the real ``POST /api/v1/scores``: 21 thumbs labels of one feedback name (posted twice, as a
retrying app would) and a 1-5 rating of another. What is checked, against a running service and in headless
Chromium: a feedback name counts its labels; a 1-5 name gets its own chart, apart from the 0-1 scorers;
coverage and judge cost use the score chart's time range and bucket; window, scorer, rule and target live in
the address (an alert's link opens its view); the session page says when no rule scores sessions; counts
read "1 decision", not "1 decisions".
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import orjson
import pytest

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from spanscore.storage.scored_runs import ScoredRunRow
from tests.e2e.test_dashboard import (
    CHROMIUM,
    RUN_NS,
    TOKEN,
    TRACES,
    BrowserWatch,
    agent_spans,
    api_url,
    decision_rows,
    get,
    needs_chromium,
    score_rows,
    trace_id,
)

UPS, DOWNS = 14, 7
RATINGS = {"a": 4.0, "b": 5.0, "c": 3.0}  # an app's 1-5 rating: mean 4.0
SESSION = "sess-1"


@pytest.fixture
def service_config(service_config: ServiceConfig) -> ServiceConfig:
    service_config.api.auth_tokens = [TOKEN]
    service_config.collector.grpc.enabled = False
    return service_config


async def post_scores(service: Service, body: list[dict[str, Any]]) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession() as session:
        async with session.post(api_url(service, "/api/v1/scores"), json=body, headers=headers) as response:
            assert response.status < 300, await response.text()


def thumbs() -> list[dict[str, Any]]:
    return [
        {"trace_id": trace_id("a"), "name": "thumbs", "label": "up" if i < UPS else "down", "author": f"user-{i}"}
        for i in range(UPS + DOWNS)
    ]


def ratings() -> list[dict[str, Any]]:
    return [{"trace_id": trace_id(n), "name": "rating", "value": v, "source": "app"} for n, v in RATINGS.items()]


@pytest.fixture
async def seeded(service: Service) -> Service:
    await service.store.insert_spans([span for name in TRACES for span in agent_spans(name)])
    await service.store.insert_scores(score_rows())
    await service.store.insert_decisions(decision_rows())
    run = {"run_id": "run-a", "input": [{"role": "user", "content": "hi"}], "output": [{"role": "assistant",
           "content": "hello"}], "tool_calls": None, "start_time_ns": RUN_NS}  # fmt: skip
    root = agent_spans("a")[0].span_id
    await service.store.insert_scored_runs([
        ScoredRunRow(RUN_NS, trace_id("a"), "run-a", root, "support-bot", "support", orjson.dumps(run).decode(),
                     session_id=SESSION)
    ])  # fmt: skip
    for _ in range(2):  # a retried POST: each label is still one label
        await post_scores(service, thumbs())
    await post_scores(service, ratings())
    return service


async def test_feedback_counts_scales_buckets_and_session_rules(seeded: Service) -> None:
    status, body, _ = await get(seeded, "/api/v1/dashboard/scorers?since=24h")
    assert status == 200, body
    rows = {(row["scorer"], row["source"]): row for row in body["scorers"]}
    # 1. a feedback name counts its labels; the mean is over numeric values only, the pass share over labels
    assert rows[("thumbs", "human")] | {"scored": UPS + DOWNS, "mean": None} == rows[("thumbs", "human")]
    assert rows[("thumbs", "human")]["pass_rate"] == pytest.approx(UPS / (UPS + DOWNS))
    assert rows[("rating", "app")]["scored"] == 3 and rows[("rating", "app")]["mean"] == pytest.approx(4.0)
    # 2. every name carries its scale: 1-5 from the rating's values, 0-1 for the scorers
    assert rows[("rating", "app")]["scale"] == {"low": 1, "high": 5, "from": "values"}
    assert rows[("faithfulness", "")]["scale"]["low"] == 0 and rows[("faithfulness", "")]["scale"]["high"] == 1
    status, trend, _ = await get(seeded, "/api/v1/dashboard/trend?since=24h&scorer=rating")
    assert status == 200 and {(p["scorer"], p["source"]) for p in trend["points"]} == {("rating", "app")}
    assert sum(p["mean"] * p["scored"] for p in trend["points"]) == pytest.approx(12.0)

    # 3. coverage and cost come in the trend's buckets, over the trend's window
    now = time.time()
    for name in ("trend", "coverage", "cost"):
        status, answer, _ = await get(seeded, f"/api/v1/dashboard/{name}?since=24h&by=hour")
        assert status == 200, (name, answer)
        assert answer["by"] == "hour" and answer["points"], name
        assert all(p["time"] % 3600 == 0 and now - 25 * 3600 <= p["time"] <= now for p in answer["points"]), name
    status, coverage, _ = await get(seeded, "/api/v1/dashboard/coverage?since=24h&by=hour&rule=support-quality")
    assert sum(p["candidates"] for p in coverage["points"]) == 5 and sum(p["scored"] for p in coverage["points"]) == 3
    status, cost, _ = await get(seeded, "/api/v1/dashboard/cost?since=7d&by=day")
    assert status == 200 and all(p["time"] % 86400 == 0 for p in cost["points"])
    assert sum(p["cost_usd"] for p in cost["points"]) == pytest.approx(0.012)
    status, wrong, _ = await get(seeded, "/api/v1/dashboard/coverage?by=week")
    assert status == 400 and "by: Input should be 'minute', 'hour' or 'day'" in wrong["error"]

    # 5. the session endpoint says which rules score sessions (none here)
    status, session, _ = await get(seeded, f"/api/v1/dashboard/sessions/{SESSION}")
    assert status == 200, session
    assert session["session_rules"] == []


def test_an_alert_links_to_its_view() -> None:
    from spanscore.alerting.links import dashboard_link

    link = dashboard_link(
        "https://spanscore.internal:4319/", "faithfulness", "15m", {"rule": "support-quality", "target": "run"}
    )
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "spanscore.internal:4319", "/dashboard/")
    assert parse_qs(parts.query) == {
        "since": ["15m"], "scorer": ["faithfulness"], "rule": ["support-quality"], "target": ["run"]
    }  # fmt: skip
    # feedback alerts name a source: the dashboard selects it as the rule source:<name>
    feedback = parse_qs(urlsplit(dashboard_link("http://h", "thumbs", "1h", {"source": "human"})).query)
    assert feedback == {"since": ["1h"], "scorer": ["thumbs"], "rule": ["source:human"]}
    assert dashboard_link("", "thumbs", "1h", {}) is None


@needs_chromium
@pytest.mark.slow
async def test_dashboard_views_in_headless_chromium(seeded: Service, tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    base = api_url(seeded, "")
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1400})
            watch = BrowserWatch(base)
            watch.attach(page)
            await check_scales_and_counts(page, base, tmp_path)
            await check_same_time_axis(page)
            await check_url_state(page, base)
            await check_session_and_plurals(page, base)
            assert watch.problems == []
        finally:
            await browser.close()


async def ready(page: Any) -> None:
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)


async def check_scales_and_counts(page: Any, base: str, tmp_path: Path) -> None:
    await page.goto(f"{base}/dashboard/#token={TOKEN}")
    await ready(page)
    await page.screenshot(path=str(tmp_path / "scales.png"), full_page=True)
    rows = await page.locator("#scorer-table tbody tr").all_inner_texts()
    thumbs_row = next(row.split("\t") for row in rows if row.startswith("thumbs"))
    assert "human" in thumbs_row[0] and thumbs_row[3] == str(UPS + DOWNS) and "66.7%" in thumbs_row
    rating_row = next(row.split("\t") for row in rows if row.startswith("rating"))
    assert "1–5" in rating_row and "4.000" in rating_row
    # one chart per scale: the 1-5 rating is not drawn on the 0-1 axis of the scorers
    charts = page.locator("#trend-chart .scale-chart")
    assert await charts.count() == 2
    scales = {await charts.nth(i).get_attribute("data-scale"): await charts.nth(i).inner_text() for i in range(2)}
    assert set(scales) == {"0–1", "1–5"}
    assert "rating" in scales["1–5"] and "faithfulness" not in scales["1–5"]
    assert "faithfulness" in scales["0–1"] and "rating" not in scales["0–1"]
    y_range = await page.evaluate("[...document.querySelectorAll('#trend-chart .scale-chart')].map((c) => "
                                  "[c.dataset.scale, Number(c.dataset.yMin), Number(c.dataset.yMax)])")  # fmt: skip
    assert sorted(y_range) == [["0–1", 0, 1], ["1–5", 1, 5]]


async def check_same_time_axis(page: Any) -> None:
    """Coverage and cost share the score chart's window and bucket (hours over 24 h, not one dot per day)."""
    ranges = await page.evaluate(
        "['trend-chart', 'coverage-chart', 'cost-chart'].map((id) => { "
        "const c = document.querySelector(`#${id} [data-x-min]`); "
        "return [Number(c.dataset.xMin), Number(c.dataset.xMax), c.dataset.by]; })"
    )
    assert ranges[0] == ranges[1] == ranges[2], ranges
    assert ranges[0][2] == "hour" and 23 * 3600 <= ranges[0][1] - ranges[0][0] <= 26 * 3600, ranges


async def check_url_state(page: Any, base: str) -> None:
    from spanscore.alerting.links import dashboard_link

    await page.select_option("#since", "7d")
    await page.select_option("#scorer", "faithfulness")
    await page.locator("#status", has_text="for faithfulness").wait_for(timeout=20_000)
    query = parse_qs(urlsplit(page.url).query)
    assert query["since"] == ["7d"] and query["scorer"] == ["faithfulness"]
    # The address alone (a new tab, a bookmark, an alert's link) opens the same view.
    link = dashboard_link(base, "toxicity", "2h", {"rule": "support-quality", "target": "run"})
    assert link is not None
    await page.goto(link)
    await ready(page)
    assert await page.locator("#since").input_value() == "2h"
    assert await page.locator("#scorer").input_value() == "toxicity"
    assert await page.locator("#target").input_value() == "run"
    assert await page.locator("#rule").input_value() == "support-quality"
    worst = await page.locator("#worst-table tbody tr").all_inner_texts()
    assert len(worst) == 2 and all("toxicity" in row for row in worst)
    status = await page.locator("#status").inner_text()
    assert "toxicity" in status and "support-quality" in status
    await page.go_back()
    await ready(page)
    assert await page.locator("#since").input_value() == "7d"
    # An address the page cannot use is named, not sent (the API would refuse it) and not half-applied.
    await page.goto(f"{base}/dashboard/?since=forever&target=span&scorer=faithfulness")
    await ready(page)
    status = await page.locator("#status").inner_text()
    assert "since=forever is not a window like 30m, 24h or 7d" in status and "target=span is not a target" in status
    assert [await page.locator(f"#{id}").input_value() for id in ("since", "target", "scorer")] == [
        "24h", "", "faithfulness"
    ]  # fmt: skip


async def check_session_and_plurals(page: Any, base: str) -> None:
    await page.goto(f"{base}/dashboard/session?id={SESSION}")
    await ready(page)
    scores_text = await page.locator("#session-scores-table tbody").inner_text()
    assert "No session score yet" not in scores_text
    assert "No rule scores whole sessions" in scores_text and "target: session" in scores_text
    assert await page.locator("#turns-note").inner_text() == "1 turn."
    await page.goto(f"{base}/dashboard/run?trace={trace_id('d')}")  # one sampled-out decision, nothing else
    await ready(page)
    status = await page.locator("#status").inner_text()
    assert "1 decision," in status and "0 scores" in status, status
    counted = await page.evaluate(
        "[Spanscore.count(1, 'statement'), Spanscore.count(2, 'statement'), Spanscore.count(0, 'reply', 'replies')]"
    )
    assert counted == ["1 statement", "2 statements", "0 replies"]


async def test_a_configured_scale_wins_over_the_values(service_config: ServiceConfig) -> None:
    """``{name: toxicity, scale: 10}`` scores 0-10: drawn on 0-10 even while every value so far is below 1."""
    service_config.rules = [
        RuleConfig.model_validate({"name": "support-quality", "scorers": [{"name": "toxicity", "scale": 10}]})
    ]
    # A judge the service never calls (no span arrives): the rule's LLM scorer needs one configured to load.
    service_config.judge = {"model": "openai/judge", "api_base": "http://127.0.0.1:9", "timeout_s": 1}
    service = Service(service_config)
    await service.start()
    try:
        await service.store.insert_scores(score_rows())
        status, body, _ = await get(service, "/api/v1/dashboard/scorers?since=24h")
    finally:
        await service.shutdown()
    assert status == 200, body
    scales = {row["scorer"]: row["scale"] for row in body["scorers"]}
    assert scales["toxicity"] == {"low": 0, "high": 10, "from": "config"}
    assert scales["faithfulness"] == {"low": 0, "high": 1, "from": "values"}
    assert scales["completeness"] == {"low": 0, "high": 1, "from": "default"}  # errored: no value yet
    assert body["rules"][0]["scales"] == {"toxicity": 10}


@pytest.mark.parametrize(
    ("low", "high", "scale"),
    [(0, 1, (0, 1)), (1, 1, (0, 1)), (3, 4, (1, 5)), (0, 4, (0, 5)), (2, 9, (1, 10)), (0, 70, (0, 100)),
     (-3, 2.5, (-3, 3)), (250, 250, (250, 251))],
)  # fmt: skip
def test_a_scale_is_told_from_the_values(low: float, high: float, scale: tuple[int, int]) -> None:
    from spanscore.server.dashboard_scales import scale_of_values

    assert scale_of_values(low, high) == {"low": scale[0], "high": scale[1], "from": "values"}
