"""Headless Chromium against the API: a page from another origin, or a rebound name, gets no query answered.

The attacker's page is served by a second aiohttp server on loopback (another port, so another
origin of the same site; ``localhost`` for another site). From it the page tries what a hostile
page can: a GET with ``?sql=``, a ``text/plain`` POST and a ``no-cors`` POST to backfill (simple
requests that need no CORS preflight), and a JSON POST (which needs one). DNS rebinding is played
with Chromium's host resolver rules: ``attacker.example`` resolves to 127.0.0.1, so the page is
same-origin with the API except for the name in ``Host``. A spy on the store records every query
that reached the engine: it must stay empty until the positive control, the API's own origin.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from spanscore.server.service import Service
from tests.e2e.test_dashboard import CHROMIUM, needs_chromium

ATTACKS_JS = """async (api) => {
  const out = {};
  const attempt = async (name, url, init) => {
    try {
      const response = await fetch(url, init);
      const text = response.type === "opaque" ? "" : await response.text();
      out[name] = {status: response.status, type: response.type, text};
    } catch (error) {
      out[name] = {status: 0, type: "error", text: String(error)};
    }
  };
  const sql = "SELECT 'leaked' AS secret";
  const plain = {"Content-Type": "text/plain"};
  const json = {"Content-Type": "application/json"};
  await attempt("get", api + "/api/v1/query?sql=" + encodeURIComponent(sql), {mode: "no-cors"});
  await attempt("text", api + "/api/v1/query", {method: "POST", mode: "no-cors", headers: plain, body: sql});
  await attempt("json", api + "/api/v1/query", {method: "POST", headers: json, body: JSON.stringify({sql})});
  const body = '{"rule": "r"}';
  await attempt("backfill", api + "/api/v1/backfill", {method: "POST", mode: "no-cors", headers: plain, body});
  return out;
}"""


@pytest.fixture
async def recorded(service: Service) -> AsyncIterator[tuple[Service, list[str]]]:
    ran: list[str] = []
    real_query = service.store.query

    async def recording_query(sql: str, fmt: str) -> bytes:
        ran.append(sql)
        return await real_query(sql, fmt)

    service.store.query = recording_query  # type: ignore[method-assign]
    yield service, ran


@pytest.fixture
async def attacker_port() -> AsyncIterator[int]:
    """A second origin on loopback serving an innocent-looking page."""

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="<!doctype html><title>cat pictures</title>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


@needs_chromium
@pytest.mark.reliability("keep-strangers-out")
@pytest.mark.slow
async def test_pages_from_other_origins_and_rebound_names_get_no_query_answered(
    recorded: tuple[Service, list[str]], attacker_port: int
) -> None:
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    service, ran = recorded
    assert service.api is not None
    api_port = service.api.port
    api = f"http://127.0.0.1:{api_port}"
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--host-resolver-rules=MAP attacker.example 127.0.0.1"]
        )
        try:
            for page_origin in (f"http://127.0.0.1:{attacker_port}", f"http://localhost:{attacker_port}"):
                await check_cross_origin_page(browser, page_origin, api)
            assert ran == []
            await check_rebound_name(browser, api_port)
            assert ran == []
            await check_own_origin_works(browser, api)
            assert ran == ["SELECT 'leaked' AS secret"]
        finally:
            await browser.close()


async def check_cross_origin_page(browser: Any, page_origin: str, api: str) -> None:
    page = await browser.new_page()
    statuses: list[tuple[str, str, int]] = []
    page.on("response", lambda r: r.url.startswith(api) and statuses.append((r.request.method, r.url, r.status)))
    await page.goto(page_origin + "/")
    results = await page.evaluate(ATTACKS_JS, api)
    await page.close()
    assert all("leaked" not in result["text"] for result in results.values()), results
    assert results["json"]["type"] == "error", results  # the preflight was refused, so the POST was never sent
    assert statuses and {status for _, _, status in statuses} == {403}, statuses
    # Reached the API and refused: the GET, the text/plain POST and the backfill; the JSON POST never left.
    assert sorted(method for method, _, _ in statuses) == ["GET", "POST", "POST"], statuses


async def check_rebound_name(browser: Any, api_port: int) -> None:
    page = await browser.new_page()
    response = await page.goto(f"http://attacker.example:{api_port}/dashboard/")
    assert response.status == 421
    results = await page.evaluate(ATTACKS_JS, f"http://attacker.example:{api_port}")
    await page.close()
    assert results["json"]["status"] == 421 and "api.allowed_hosts" in results["json"]["text"], results
    assert all("leaked" not in result["text"] for result in results.values()), results


async def check_own_origin_works(browser: Any, api: str) -> None:
    """The control: the same JSON POST from the API's own origin (the dashboard) is answered."""
    page = await browser.new_page()
    await page.goto(api + "/dashboard/")
    results = await page.evaluate(
        """async (sql) => {
          const response = await fetch("/api/v1/query", {method: "POST", headers: {"Content-Type": "application/json"},
                                                          body: JSON.stringify({sql})});
          return {status: response.status, body: await response.json()};
        }""",
        "SELECT 'leaked' AS secret",
    )
    await page.close()
    assert results == {"status": 200, "body": results["body"]} and results["body"]["data"] == [{"secret": "leaked"}]
