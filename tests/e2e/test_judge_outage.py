"""A judge outage, as an operator lives it (#40 item 3): status, logs, dashboard, then the documented repair.

A real service scores live traffic with an LLM scorer through litellm over HTTP. The judge's address is a
closed loopback port first (connection refused), then the fake OpenAI-compatible judge starts on that very
port. While the judge is out, ``spanscore status`` (the API's figures, worded by the CLI's formatter) says
degraded with the cause in plain words, the log says so at WARNING, and the dashboard shows it in headless
Chromium; once the documented backfill has scored the errored runs again, every error count (status,
/metrics, the dashboard's scorer table) is back to 0 and the judge's problem is gone.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from spanscore.cli.status_text import format_status
from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_dashboard import CHROMIUM
from tests.e2e.test_live_scoring import agent_traces
from tests.fakes.fake_openai import FakeJudgeServer, Reply
from tests.ports import free_port

VERDICT = {"verdicts": [{"verdict": "no", "reason": "a polite factual answer"}]}
RUNS = 3
OBJECT_REPR = re.compile(r"object at 0x|<[\w.]+ object")


async def _get(service: Service, path: str) -> tuple[int, Any]:
    assert service.api is not None
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{service.api.port}{path}") as response:
            body = await (response.json() if "json" in response.content_type else response.text())
            return response.status, body


async def _status_text(service: Service) -> str:
    """What ``spanscore status`` prints: the API's figures through the CLI's own formatter."""
    code, metrics = await _get(service, "/api/v1/status")
    assert code == 200
    return format_status(metrics, "http://api")


async def _until(check: Callable[[], Awaitable[bool]], what: str, wait_s: float = 60.0) -> None:
    deadline = time.monotonic() + wait_s
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)


def _judged_config(config: ServiceConfig, port: int) -> ServiceConfig:
    config.judge = {
        "model": "openai/judge",
        "api_base": f"http://127.0.0.1:{port}/v1",
        "timeout_s": 5,
        "retries": 1,
        "backoff_initial_s": 0.05,
        "backoff_max_s": 0.1,
        "breaker_cooldown_s": 1,
        "worker_processes": 0,
    }
    config.collector.runs = config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    config.scoring.poll_interval_s = 0.05
    config.scoring.max_attempts = 2
    config.rules = [RuleConfig.model_validate({"name": "safety", "scorers": ["toxicity"]})]
    return config


async def _judge_out(service: Service, port: int) -> None:
    """Traffic while nothing listens at the judge's address, until every run's score ended in an error."""
    assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), agent_traces(RUNS)) == "SUCCESS"

    async def all_errored() -> bool:
        rows = await asyncio.to_thread(
            service.store.internal_query, "SELECT count() FROM scores FINAL WHERE Status = 'error'"
        )
        return int(rows[0][0]) >= RUNS

    await _until(all_errored, "the errored scores")


async def _backfill(service: Service) -> dict[str, Any]:
    """The documented repair, ``spanscore backfill safety --since 1h``, through the API the CLI calls."""
    assert service.api is not None
    async with aiohttp.ClientSession() as session:
        url = f"http://127.0.0.1:{service.api.port}/api/v1/backfill"
        async with session.post(url, json={"rule": "safety", "since": "1h"}) as response:
            assert response.status == 200
            answer: dict[str, Any] = await response.json()
    statuses = await asyncio.to_thread(
        service.store.internal_query, "SELECT Status, count() FROM scores FINAL GROUP BY Status"
    )
    assert answer["rescored_after_errors"] == RUNS and statuses == [("ok", RUNS)], (answer, statuses)
    return answer


async def test_status_and_dashboard_name_a_judge_outage_while_it_lasts(service_config: ServiceConfig) -> None:
    port = free_port()
    service = Service(_judged_config(service_config, port))
    await service.start()
    try:
        await _judge_out(service, port)
        first = (await _status_text(service)).splitlines()[0]
        assert re.search(
            rf"degraded: judge openai/judge unreachable: connection refused to 127\.0\.0\.1:{port} "
            r"\(\d+ calls failing for \d+ s",
            first,
        ), first
        assert not OBJECT_REPR.search(first), first
        errors = await asyncio.to_thread(service.store.internal_query, "SELECT DISTINCT Error FROM scores FINAL")
        assert all(f"connection refused to 127.0.0.1:{port}" in e and not OBJECT_REPR.search(e) for (e,) in errors)
        await _dashboard_check(service, outage=True)

        # The judge comes back on the same address: its next answer ends the outage everywhere.
        async with FakeJudgeServer(port=port) as judge:
            judge.script("judge", *[Reply.json(VERDICT)] * (RUNS * 2))
            await _backfill(service)
            text = await _status_text(service)
            assert text.splitlines()[0] == "spanscore at http://api: healthy", text
            _, exposition = await _get(service, "/metrics")
            assert "spanscore_judge_failing_calls" not in exposition
            await _dashboard_check(service, outage=False)
    finally:
        await service.shutdown()


async def test_judge_failures_are_logged_at_warning_with_a_plain_cause(
    service_config: ServiceConfig, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    service = Service(_judged_config(service_config, port))
    await service.start()
    caplog.set_level(logging.INFO)
    try:
        await _judge_out(service, port)
    finally:
        await service.shutdown()
    failures = [r for r in caplog.records if r.name.startswith("spanscore.scorers.judge")]
    assert failures and all(r.levelno == logging.WARNING for r in failures), [r.levelname for r in failures]
    assert all(f"connection refused to 127.0.0.1:{port}" in r.getMessage() for r in failures)
    judge_logs = [r.getMessage() for r in caplog.records if "judge" in r.getMessage()]
    assert not [m for m in judge_logs if OBJECT_REPR.search(m)], judge_logs


async def test_a_backfill_that_repairs_the_errors_clears_every_error_count(service_config: ServiceConfig) -> None:
    """status, /metrics and the dashboard count the errors standing in scores FINAL, not every error ever written."""
    port = free_port()
    service = Service(_judged_config(service_config, port))
    await service.start()
    try:
        await _judge_out(service, port)

        async def counted() -> bool:
            return f"{RUNS} stand in an error now (safety {RUNS})" in await _status_text(service)

        await _until(counted, "status to count the errors standing")
        async with FakeJudgeServer(port=port) as judge:
            judge.script("judge", *[Reply.json(VERDICT)] * (RUNS * 2))
            await _backfill(service)
        text = await _status_text(service)
        assert "none stands in an error" in text and "ended in an error" not in text, text
        _, exposition = await _get(service, "/metrics")
        assert "spanscore_scores_errors_held 0.0" in exposition, exposition
        _, scorers = await _get(service, "/api/v1/dashboard/scorers?since=1h")
        [toxicity] = [row for row in scorers["scorers"] if row["scorer"] == "toxicity"]
        assert toxicity["errors"] == 0 and toxicity["scored"] == RUNS, toxicity
        await _dashboard_check(service, outage=False)
    finally:
        await service.shutdown()


async def _dashboard_check(service: Service, *, outage: bool) -> None:
    """The page in headless Chromium: the judge banner while the judge is out, none after; errors as stored."""
    if CHROMIUM is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium; or set SPANSCORE_CHROMIUM)")
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    assert service.api is not None
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = await browser.new_page()
            await page.goto(f"http://127.0.0.1:{service.api.port}/dashboard/?since=1h")
            await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
            await page.wait_for_selector("#judge-health[data-checked]", state="attached", timeout=20_000)
            banner = page.locator("#judge-health")
            rows = await page.locator("#scorer-table tbody tr").all_inner_texts()
            [toxicity] = [row for row in rows if row.startswith("toxicity")]
            if outage:
                assert await banner.is_visible()
                text = await banner.inner_text()
                assert "Judge openai/judge unreachable: connection refused to 127.0.0.1:" in text, text
                assert not OBJECT_REPR.search(text), text
            else:
                assert not await banner.is_visible()
                assert toxicity.split()[-1] == "0", toxicity  # the Errors column, from scores FINAL
        finally:
            await browser.close()
