"""The runs list filtered to one version of the agent, and the compare page linking each version to it (#41 item 4).

Seeded like test_dashboard_compare.py (900 runs, every third of version 1.5.0 by ``service.version``, the
rest 1.4.0) plus the rules' decisions on the first twelve runs, which put those in the runs list.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from spanscore.server.service import Service
from spanscore.storage.scores import DecisionRow
from tests.e2e.test_dashboard import CHROMIUM, get, needs_chromium
from tests.e2e.test_dashboard_compare import TOKEN, _url, seeded, service_config
from tests.unit.storage.test_compare_store import _rows

__all__ = ["seeded", "service_config"]  # fixtures used by name below
LISTED = 12
NEW = sorted(f"{i:032x}" for i in range(LISTED) if i % 3 == 0)  # the listed runs of 1.5.0
OLD = sorted(f"{i:032x}" for i in range(LISTED) if i % 3)


@pytest.fixture
async def listed(seeded: Service) -> Service:
    rows = [r for r in _rows()[0] if r.scorer == "correct"][:LISTED]
    await seeded.store.insert_decisions([
        DecisionRow(r.run_timestamp_ns, r.trace_id, r.trace_id[16:], r.trace_id[16:], r.service_name, r.agent_name,
                    "r", "sampled", r.sample_rate, "sampled", "quiet_period")  # RunId unique: decisions key on it
        for r in rows
    ])  # fmt: skip
    return seeded


async def _traces(service: Service, query: str) -> tuple[int, object]:
    status, body, _ = await get(service, f"/api/v1/dashboard/runs?per_page=100&{query}", TOKEN)
    if status != 200:
        return status, body
    return status, sorted(r["trace_id"] for r in body["runs"])


async def test_the_runs_api_filters_by_a_kept_attribute_and_by_a_score_column(listed: Service) -> None:
    assert await _traces(listed, "") == (200, sorted(NEW + OLD))
    assert await _traces(listed, "version_by=service.version&version=1.5.0") == (200, NEW)
    assert await _traces(listed, "version_by=service.version&version=1.4.0") == (200, OLD)
    assert await _traces(listed, "version_by=service.version&version=9.9") == (200, [])
    model = _rows()[0][3].model  # run 1's model (1.4.0)
    assert await _traces(listed, f"version_by=gen_ai.request.model&version={model}") == (200, OLD)


async def test_an_attribute_no_score_keeps_lists_nothing_and_says_where_it_looked(listed: Service) -> None:
    status, body, _ = await get(listed, "/api/v1/dashboard/runs?version_by=feature.flag&version=new", TOKEN)
    assert status == 200 and body["runs"] == [], body  # a span attribute: compare reads it, the list cannot
    assert "no score of this window keeps 'feature.flag'" in body["note"], body
    status, body, _ = await get(listed, "/api/v1/dashboard/runs?version_by=service.version&version=9.9", TOKEN)
    assert status == 200 and body["runs"] == [] and "note" not in body, body  # kept, just no such version


async def test_a_version_without_its_attribute_name_is_refused_with_the_fix(listed: Service) -> None:
    status, body = await _traces(listed, "version=1.5.0")
    assert status == 400 and "version_by" in str(body)
    status, body = await _traces(listed, "version_by=service.version")
    assert status == 400 and "version" in str(body)


@needs_chromium
@pytest.mark.slow
async def test_a_version_row_on_the_compare_page_opens_the_runs_list_filtered_to_it(listed: Service) -> None:
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    base = _url(listed, "")
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = await browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{base}/dashboard/compare?by=service.version&baseline=1.4.0&since=24h#token={TOKEN}")
            await page.wait_for_selector("body[data-state=ready]", timeout=30_000)
            # no seeded run carries a cost: unknown, not 0
            assert set(await page.locator("table.compare td.cost").all_inner_texts()) == {"unknown"}
            link = page.locator("table.compare").first.locator("a.version-runs", has_text="1.5.0")
            await link.click()
            await page.wait_for_url("**/dashboard/runs?**", timeout=30_000)
            query = parse_qs(urlsplit(page.url).query)
            assert query["version_by"] == ["service.version"] and query["version"] == ["1.5.0"]
            await page.wait_for_selector("body[data-state=ready]", timeout=30_000)
            assert await page.input_value("#version_by") == "service.version"
            assert await page.input_value("#version") == "1.5.0"
            shown = await page.locator("#runs-table a.run-link").evaluate_all(
                "links => links.map(a => new URLSearchParams(a.getAttribute('href').split('?')[1]).get('trace'))"
            )
            assert sorted(shown) == NEW
            # the filter is URL state like the others: changing it writes the address, Back restores the previous
            await page.fill("#version", "1.4.0")
            await page.click("#search button[type=submit]")
            await page.wait_for_url("**version=1.4.0**", timeout=30_000)
            await playwright.expect(page.locator("#runs-table a.run-link")).to_have_count(len(OLD), timeout=30_000)
            await page.go_back()
            await playwright.expect(page.locator("#runs-table a.run-link")).to_have_count(len(NEW), timeout=30_000)
            assert await page.input_value("#version") == "1.5.0"
            assert errors == []
        finally:
            await browser.close()
