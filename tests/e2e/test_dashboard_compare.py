"""The dashboard's compare page and POST /api/v1/compare on a running service (#41).

Versions side by side per scorer with the verdict; the form lives in the address (like the other views),
so the comparison can be shared and Back returns to the previous one.
"""

from __future__ import annotations

import json
import time
from typing import Any

import aiohttp
import pytest

from spanscore.config import ServiceConfig
from spanscore.server.service import Service
from spanscore.storage.scored_runs import ScoredRunRow
from tests.e2e.test_dashboard import CHROMIUM, needs_chromium
from tests.unit.storage.test_compare_store import _rows

TOKEN = "compare-token"


@pytest.fixture
def service_config(service_config: ServiceConfig) -> ServiceConfig:
    service_config.api.auth_tokens = [TOKEN]
    service_config.collector.grpc.enabled = False
    return service_config


@pytest.fixture
async def seeded(service: Service) -> Service:
    rows = _rows()[0]
    await service.store.insert_scores(rows)
    same = json.dumps({"input": [{"role": "user", "content": "refund please"}]})
    await service.store.insert_scored_runs([
        ScoredRunRow(time.time_ns() - 3600 * 10**9, trace, trace[:16], "s" * 16, "svc", "a", same)
        for trace in (rows[0].trace_id, rows[2].trace_id)  # runs 0 and 1: versions 1.5.0 and 1.4.0
    ])  # fmt: skip
    return service


def _url(service: Service, path: str) -> str:
    assert service.api is not None
    return f"http://127.0.0.1:{service.api.port}{path}"


async def _post(service: Service, body: dict[str, Any], token: str | None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session:
        async with session.post(_url(service, "/api/v1/compare"), json=body, headers=headers) as response:
            return response.status, await response.json()


async def test_post_compare_needs_the_token_and_answers_per_scorer(seeded: Service) -> None:
    body = {"by": "service.version", "baseline": "1.4.0", "since": "24h"}
    status, answer = await _post(seeded, body, None)
    assert status == 401
    status, answer = await _post(seeded, body, TOKEN)
    assert status == 200, answer
    assert [s["scorer"] for s in answer["scorers"]] == ["correct", "tone"]
    assert all(v["verdict"] in ("better", "worse", "no_difference", "too_few") for s in answer["scorers"]
               for v in s["versions"][1:])  # fmt: skip


@needs_chromium
@pytest.mark.slow
async def test_compare_page_in_headless_chromium(seeded: Service) -> None:
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    base = _url(seeded, "")
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = await browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{base}/dashboard/compare?by=service.version&baseline=1.4.0&since=24h#token={TOKEN}")
            await page.wait_for_selector("body[data-state=ready]", timeout=30_000)
            captions = await page.locator("table.compare caption").all_inner_texts()
            assert captions == ["correct", "tone"]
            verdicts = await page.locator("td.verdict").all_inner_texts()
            assert verdicts[0] == "baseline" and len(verdicts) == 4
            # a chart of each version over time per scorer, drawn by charts.js like the other pages
            charts = page.locator(".compare-chart")
            assert [await c.get_attribute("data-scorer") for c in await charts.all()] == ["correct", "tone"]
            assert await page.locator(".compare-chart canvas").count() == 2
            label = await charts.first.get_attribute("aria-label")
            assert label is not None and "1.4.0" in label and "1.5.0" in label
            # each version's worst runs: links to the run page, the worst first, and to the runs list
            worst = page.locator("ul.worst-runs").first.locator("li[data-version='1.5.0'] a.worst-run")
            assert await worst.count() == 5
            href = await worst.first.get_attribute("href")
            assert href is not None and href.startswith("run?trace=")
            # runs of the two versions on the same input, each linked to its run page
            pair = page.locator("ul.same-input li a")
            assert [await a.get_attribute("data-version") for a in await pair.all()] == ["1.4.0", "1.5.0"]
            assert "refund please" in await page.locator("ul.same-input li code").inner_text()
            await page.locator("ul.worst-runs li[data-version='1.4.0'] a.runs-list").first.click()
            await page.wait_for_url("**/dashboard/runs?**", timeout=30_000)
            assert "scorer=correct" in page.url and "sort=worst" in page.url and "version=1.4.0" in page.url
            await page.go_back()
            await page.wait_for_selector("table.compare caption", timeout=30_000)
            await page.fill("#baseline", "1.5.0")
            await page.click("#compare-form button[type=submit]")
            await page.wait_for_url("**baseline=1.5.0**", timeout=30_000)
            first_cell = page.locator("table.compare tbody tr td").first
            await playwright.expect(first_cell).to_have_text("1.5.0", timeout=30_000)
            await page.go_back()
            await playwright.expect(first_cell).to_have_text("1.4.0", timeout=30_000)
            assert errors == []
        finally:
            await browser.close()
