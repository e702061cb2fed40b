"""Judge cost litellm cannot price is unknown everywhere, never $0; priced cost still sums (#40 item 6).

A real service scores live traffic with two rules through the fake OpenAI-compatible judge over real HTTP:
``prod`` asks ``openai/judge`` (a name litellm has no price for), ``beta`` asks ``openai/gpt-4o-mini`` (priced
from litellm's bundled table by the tokens the fake reports). The stored scores, ``judge_cost_daily``, the
Grafana cost panel's own SQL, the dashboard's cost API and page in headless Chromium, and ``judge check``
must all say unknown for the first and the right sum for the second.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from typing import Any

import aiohttp
import pytest

from spanscore.cli.status_text import format_status
from spanscore.config import ServiceConfig
from spanscore.offline.judge_check import check_judge, print_report
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.judge.config import JudgeConfig
from spanscore.server.service import Service
from tests.deploy.test_deploy import dashboard_panels, grafana_to_sql
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_dashboard import CHROMIUM
from tests.e2e.test_live_scoring import agent_traces
from tests.fakes.fake_openai import FakeJudgeServer, Reply

VERDICT = {"verdicts": [{"verdict": "no", "reason": "a polite factual answer"}]}
UNPRICED, PRICED = "openai/judge", "openai/gpt-4o-mini"


async def _query(service: Service, sql: str) -> list[tuple[Any, ...]]:
    return await asyncio.to_thread(service.store.internal_query, sql)


async def _scored(service: Service, expected: int) -> None:
    deadline = time.monotonic() + 60
    while (await _query(service, "SELECT count() FROM scores FINAL WHERE Status = 'ok'"))[0][0] < expected:
        assert time.monotonic() < deadline, "scores never arrived"
        await asyncio.sleep(0.2)


async def test_unknown_cost_is_null_and_shown_as_unknown_while_priced_cost_sums(
    service_config: ServiceConfig,
) -> None:
    async with FakeJudgeServer() as judge:
        judge.default_reply = Reply.json(VERDICT)
        service_config.judge = {"model": UNPRICED, "api_base": judge.base_url, "worker_processes": 0}
        service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
        service_config.scoring.poll_interval_s = 0.05
        service_config.rules = [
            RuleConfig.model_validate({"name": "prod", "scorers": ["toxicity"]}),
            RuleConfig.model_validate(
                {"name": "beta", "scorers": [{"name": "toxicity", "options": {"model": PRICED}}]}
            ),
        ]
        service = Service(service_config)
        await service.start()
        try:
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), agent_traces(2)) == "SUCCESS"
            await _scored(service, 4)
            await _check_store_and_views(service)
            await _check_status(service)
            await _check_grafana_panel(service)
            await _check_dashboard(service)
        finally:
            await service.shutdown()


async def _check_store_and_views(service: Service) -> None:
    costs = await _query(service, "SELECT Rule, CostUsd FROM scores FINAL ORDER BY Rule")
    priced = [cost for rule, cost in costs if rule == "beta"]
    assert [cost for rule, cost in costs if rule == "prod"] == [None, None], costs
    assert len(priced) == 2 and all(isinstance(c, float) and c > 0 for c in priced), costs
    daily = dict(await _query(service, "SELECT JudgeModel, CostUsd FROM judge_cost_daily"))
    assert daily[UNPRICED] is None and daily[PRICED] == pytest.approx(sum(priced)), daily


async def _check_status(service: Service) -> None:
    """``spanscore status``: the API's figures through the CLI's formatter name the scores of unknown cost."""
    assert service.api is not None
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{service.api.port}/api/v1/status") as response:
            text = format_status(await response.json(), "http://api")
    assert "4 written (2 of unknown judge cost: no price for the model)" in text, text


async def _check_grafana_panel(service: Service) -> None:
    """The shipped panel's own query says NULL for the unpriced model, and the panel writes NULL as unknown."""
    [panel] = [p for p in dashboard_panels() if p["title"].lower().startswith("judge cost")]
    rows = await _query(service, grafana_to_sql(panel["targets"][0]["rawSql"]))
    by_model = {model: cost for _, model, cost in rows}
    assert by_model[UNPRICED] is None and by_model[PRICED] > 0, rows
    mappings = panel["fieldConfig"]["defaults"].get("mappings", [])
    assert {"type": "special", "options": {"match": "null", "result": {"text": "unknown"}}} in mappings, mappings


async def _check_dashboard(service: Service) -> None:
    assert service.api is not None
    base = f"http://127.0.0.1:{service.api.port}"
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{base}/api/v1/dashboard/cost?since=1h") as response:
            points = (await response.json())["points"]
    by_model = {point["judge_model"]: point for point in points}
    assert by_model[UNPRICED]["cost_usd"] is None and by_model[UNPRICED]["unpriced_scores"] == 2, points
    assert by_model[PRICED]["cost_usd"] > 0 and by_model[PRICED]["unpriced_scores"] == 0, points
    if CHROMIUM is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium; or set SPANSCORE_CHROMIUM)")
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = await browser.new_page()
            await page.goto(f"{base}/dashboard/?since=1h")
            await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
            rows = await page.locator("#cost-table tbody tr").all_inner_texts()
            [unpriced] = [row for row in rows if UNPRICED in row]
            [priced] = [row for row in rows if PRICED in row]
            assert "unknown" in unpriced and "$0" not in unpriced, unpriced
            assert "$" in priced and "unknown" not in priced, priced
            total = await page.locator("#cost-total").inner_text()
            assert "unknown" in total and "2 scores" in total, total
        finally:
            await browser.close()


async def test_judge_check_says_unknown_for_a_model_litellm_cannot_price() -> None:
    async with FakeJudgeServer() as judge:
        judge.default_reply = Reply.json(VERDICT)
        out = io.StringIO()
        for model in (UNPRICED, PRICED):
            config = JudgeConfig(model=model, api_base=judge.base_url, worker_processes=0)
            print_report(await check_judge(config, ["toxicity"]), model, out)
    unpriced, priced = [line for line in out.getvalue().splitlines() if line.startswith("toxicity")]
    assert unpriced.split()[-2] == "unknown" and "0.00000" not in unpriced, unpriced
    assert float(priced.split()[-2]) > 0, priced
    assert json.dumps(out.getvalue())  # printable as it stands
