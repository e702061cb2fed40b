"""Issue #40 item 7: finding a run on the dashboard, and saying truthfully what a row and a score are.

Seeded like ``test_dashboard.py`` (traces a, b, c scored; d, e, f only decided), plus one run "n" ten
minutes later from a service whose spans name no agent, in a session and for a user, scored by
faithfulness against its tool result (no retrieved context). Checked against a running service and in
headless Chromium: a runs list searchable by trace, session, user, agent, scorer result and text, paged,
sorted and kept in the address; an auto-refresh that is off unless the address asks; minute buckets for
a short window; the service name marked as a service where a run has no agent name; the run page naming
the context a scorer used.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import orjson
import pytest

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import DecisionRow, ScoreRow, score_id
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_dashboard import (
    CHROMIUM,
    RUN_NS,
    TOKEN,
    TRACES,
    agent_spans,
    api_url,
    decision_rows,
    get,
    needs_chromium,
    score_rows,
    trace_id,
)
from tests.e2e.test_live_scoring import agent_traces
from tests.fakes.fake_openai import FakeJudgeServer, Reply

LATE_NS = RUN_NS + 20 * 60 * 10**9  # ten minutes ago: another minute than a, b and c, inside the last hour
N = f"{0xABC:032x}"  # the run without an agent name
SESSION, USER, SERVICE = "sess-9", "user-7", "billing-svc"
ALL_RUNS = [trace_id(name) for name in ("a", "b", "c", "d", "e", "f")] + [N]


@pytest.fixture
def service_config(service_config: ServiceConfig) -> ServiceConfig:
    service_config.api.auth_tokens = [TOKEN]
    service_config.collector.grpc.enabled = False
    return service_config


def late_rows() -> tuple[ScoreRow, DecisionRow, ScoredRunRow]:
    root = N[:16]
    score = ScoreRow(
        score_id=score_id("support-quality", "faithfulness", "1", N, root), run_timestamp_ns=LATE_NS, trace_id=N,
        span_id=root, run_id="run-n", service_name=SERVICE, agent_name="", model="gpt-x", session_id=SESSION,
        user_id=USER, rule="support-quality", scorer="faithfulness", scorer_version="1", score=0.3, label="fail",
        reason="The refund amount is not in the tool result.", status="ok", error="", sample_rate=1.0,
        higher_is_better=True, judge_model="judge-1", input_tokens=10, output_tokens=5, cost_usd=0.001,
        duration_ms=5.0, ready_reason="root_ended", run_duration_ms=100.0, run_error="",
        attributes={"context.source": "tool_results"},
    )  # fmt: skip
    decision = DecisionRow(LATE_NS, N, root, "run-n", SERVICE, "", "support-quality", "sampled", 1.0, "sampled",
                           "root_ended")  # fmt: skip
    view = {
        "run_id": "run-n", "trace_id": N, "span_id": root, "service_name": SERVICE, "agent_name": None,
        "input": [{"role": "user", "content": "How much is my refund?"}],
        "output": [{"role": "assistant", "content": "Your refund is 40 euros."}], "answer": "Your refund is 40 euros.",
        "tool_calls": [{"order": 0, "name": "lookup_refund", "arguments": {"order": 7}, "result": "refund: 30 EUR"}],
        "context": None, "ground_truth": None, "system": None, "start_time_ns": LATE_NS,
        "sources": {"input": "gen_ai.input.messages", "tool_calls": "gen_ai.tool.call.result"},
    }  # fmt: skip
    stored = ScoredRunRow(LATE_NS, N, "run-n", root, SERVICE, "", orjson.dumps(view).decode(), session_id=SESSION)
    return score, decision, stored


@pytest.fixture
async def seeded(service: Service) -> Service:
    await service.store.insert_spans([span for name in TRACES for span in agent_spans(name)])
    score, decision, stored = late_rows()
    await service.store.insert_scores([*score_rows(), score])
    await service.store.insert_decisions([*decision_rows(), decision])
    run_a = {
        "run_id": "run-a",
        "input": [{"role": "user", "content": "What is the refund policy in Lisbon?"}],
        "output": [{"role": "assistant", "content": "30 days."}],
        "tool_calls": None,
        "start_time_ns": RUN_NS,
    }
    await service.store.insert_scored_runs([
        ScoredRunRow(RUN_NS, trace_id("a"), "run-a", agent_spans("a")[0].span_id, "support-bot", "support",
                     orjson.dumps(run_a).decode()),
        stored,
    ])  # fmt: skip
    return service


async def runs(service: Service, query: str) -> list[str]:
    status, body, _ = await get(service, f"/api/v1/dashboard/runs?{query}")
    assert status == 200, (query, body)
    return [row["trace_id"] for row in body["runs"]]


async def test_the_runs_list_searches_pages_and_sorts(seeded: Service) -> None:
    assert await runs(seeded, "since=24h") == [N, *sorted(ALL_RUNS[:6])]  # newest first, then by trace id
    assert await runs(seeded, "since=24h&sort=oldest") == [*sorted(ALL_RUNS[:6]), N]
    assert await runs(seeded, f"trace={trace_id('b')[:10].upper()}") == [trace_id("b")]  # a prefix, any case
    assert await runs(seeded, f"session={SESSION}") == [N]
    assert await runs(seeded, f"user={USER}") == [N]
    assert N not in await runs(seeded, "agent=support") and trace_id("a") in await runs(seeded, "agent=support")
    assert await runs(seeded, f"service={SERVICE}") == [N]
    assert await runs(seeded, "scorer=faithfulness&outcome=fail") == [N, trace_id("c")]
    assert await runs(seeded, "scorer=faithfulness&below=0.5&sort=oldest") == [trace_id("c"), N]
    assert await runs(seeded, "scorer=toxicity&below=0.5") == [trace_id("a")]
    assert await runs(seeded, "scorer=completeness&outcome=error") == [trace_id("c")]
    assert await runs(seeded, "text=LISBON") == [trace_id("a")]  # input and output text, case-insensitive
    assert await runs(seeded, "text=40%20euros") == [N]
    assert await runs(seeded, "text=%27%20OR%201%3D1%20--") == []  # a value, never SQL
    # Worst first: each run's lowest oriented score (toxicity 0.8 is worse than faithfulness 0.2), unscored last.
    assert (await runs(seeded, "sort=worst"))[:4] == [trace_id("b"), trace_id("a"), trace_id("c"), N]

    status, page1, _ = await get(seeded, "/api/v1/dashboard/runs?per_page=3&page=1")
    assert status == 200 and len(page1["runs"]) == 3 and page1["has_more"] is True
    status, page3, _ = await get(seeded, "/api/v1/dashboard/runs?per_page=3&page=3")
    assert [r["trace_id"] for r in page3["runs"]] == [sorted(ALL_RUNS[:6])[-1]] and page3["has_more"] is False
    [row] = (await get(seeded, f"/api/v1/dashboard/runs?trace={N}"))[1]["runs"]
    assert row | {"agent_name": "", "service_name": SERVICE, "session_id": SESSION, "user_id": USER} == row
    assert {(s["scorer"], s["label"]) for s in row["scores"]} == {("faithfulness", "fail")}
    assert "limits" in page1 and page1["limits"]["text_scan_runs"] > 0  # the text search's bound is stated

    for path, wanted in [
        ("text=a", "text: String should have at least 2 characters"),
        (f"text={'x' * 201}", "text: String should have at most 200 characters"),
        ("trace=xyz", "trace: String should match pattern"),
        ("page=0", "page: Input should be greater than or equal to 1"),
        ("per_page=1000", "per_page: Input should be less than or equal to 100"),
        ("sort=random", "sort: Input should be"),
        ("outcome=fail", "outcome and below need a scorer"),
        ("scorer=x%27%20OR%201%3D1", "scorer: String should match pattern"),
        ("sql=SELECT%201", "sql: Extra inputs are not permitted"),
        ("page=10001", "page: Input should be less than or equal to"),
    ]:
        status, body, _ = await get(seeded, f"/api/v1/dashboard/runs?{path}")
        assert (status, wanted in body.get("error", "")) == (400, True), (path, body)
    for token in (None, "wrong"):
        status, body, _ = await get(seeded, "/api/v1/dashboard/runs?text=refund", token=token)
        assert status == 401, body


async def test_a_short_window_is_drawn_in_minutes(seeded: Service) -> None:
    for name in ("trend", "coverage", "cost"):
        status, body, _ = await get(seeded, f"/api/v1/dashboard/{name}?since=1h&by=minute")
        assert status == 200, (name, body)
        assert body["points"] and all(p["time"] % 60 == 0 for p in body["points"]), name
        assert len({p["time"] for p in body["points"]}) == 2, (name, body["points"])  # a-c's minute and n's
    status, body, _ = await get(seeded, "/api/v1/dashboard/trend?since=1h&by=minute&scorer=faithfulness")
    assert sum(p["scored"] for p in body["points"]) == 4
    assert sum(p["mean"] * p["scored"] for p in body["points"]) == pytest.approx(0.9 + 0.7 + 0.2 + 0.3)
    status, body, _ = await get(seeded, "/api/v1/dashboard/trend?since=7d&by=minute")
    assert status == 400 and "minute buckets are for windows up to 6h" in body["error"]


async def test_a_score_names_the_context_it_was_judged_against(seeded: Service) -> None:
    status, run, _ = await get(seeded, f"/api/v1/dashboard/runs/{N}")
    assert status == 200, run
    assert [(s["scorer"], s["context_source"]) for s in run["scores"]] == [("faithfulness", "tool_results")]


def watch_problems(page: Any, problems: list[str]) -> None:
    """Console and page errors (pages that navigate while answers arrive: their bodies are not read)."""
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))


@needs_chromium
@pytest.mark.slow
@pytest.mark.parametrize("check", ["agents_and_minutes", "refresh", "runs_page", "run_page_context"])
async def test_dashboard_observations_in_chromium(seeded: Service, tmp_path: Path, check: str) -> None:
    """One observation of the issue per browser session, so each can fail on its own."""
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    base = api_url(seeded, "")
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1400})
            problems: list[str] = []
            watch_problems(page, problems)
            await page.goto(f"{base}/dashboard/#token={TOKEN}")
            await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
            await CHECKS[check](page, base, tmp_path)
            await page.wait_for_load_state("networkidle")
            assert problems == []
        finally:
            await browser.close()


async def check_agents_and_minutes(page: Any, base: str, tmp_path: Path) -> None:
    # The run without an agent name shows its service, marked as the service.
    rows = await page.locator("#worst-table tbody tr").all_inner_texts()
    [late] = [row for row in rows if "not in the tool result" in row]
    assert f"{SERVICE} (service, no agent name)" in late
    assert all("support" in row for row in rows if row != late)
    # The last hour is drawn in minutes.
    trend = page.wait_for_event("response", lambda r: "/api/v1/dashboard/trend" in r.url)
    await page.goto(f"{base}/dashboard/?since=1h")
    answer = await (await trend).json()
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    assert answer["by"] == "minute" and len({p["time"] for p in answer["points"]}) == 2
    assert await page.locator("#trend-chart .chart-host").first.get_attribute("data-by") == "minute"


async def check_refresh(page: Any, base: str, tmp_path: Path) -> None:
    # Auto-refresh is off unless asked for; asked for in the address, the page reloads its data by itself.
    assert await page.locator("#refresh").input_value() == ""
    loads: list[str] = []
    three_loads = asyncio.Event()

    def count_load(request: Any) -> None:
        if "/api/v1/dashboard/trend" in request.url:
            loads.append(request.url)
            if len(loads) >= 3:
                three_loads.set()

    page.on("request", count_load)
    await asyncio.sleep(6)  # longer than the shortest interval offered: nothing reloads while refresh is off
    assert loads == []
    await page.goto(f"{base}/dashboard/?since=1h&refresh=5s")
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    assert await page.locator("#refresh").input_value() == "5s"
    await asyncio.wait_for(three_loads.wait(), timeout=30)  # the first load and two refreshes
    await page.select_option("#refresh", "")
    assert "refresh" not in parse_qs(urlsplit(page.url).query)


async def check_runs_page(page: Any, base: str, tmp_path: Path) -> None:
    await page.get_by_role("link", name="Runs", exact=True).click()
    await page.wait_for_url(lambda url: "/dashboard/runs" in url)
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    assert await page.locator("#runs-table tbody tr").count() == len(ALL_RUNS)
    await page.get_by_label("Session").fill(SESSION)
    await page.get_by_role("button", name="Search").click()
    await page.wait_for_url(lambda url: f"session={SESSION}" in url)
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    rows = await page.locator("#runs-table tbody tr").all_inner_texts()
    assert len(rows) == 1 and f"{SERVICE} (service, no agent name)" in rows[0] and USER in rows[0]
    await page.screenshot(path=str(tmp_path / "runs.png"), full_page=True)
    # The view lives in the address: opening it again shows the same search.
    await page.goto(f"{base}/dashboard/runs?text={quote('lisbon')}&per_page=1")
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    assert await page.get_by_label("Text").input_value() == "lisbon"
    rows = await page.locator("#runs-table tbody tr").all_inner_texts()
    assert len(rows) == 1 and trace_id("a")[:12] in rows[0]
    await page.goto(f"{base}/dashboard/runs?scorer=faithfulness&below=0.5&per_page=1")
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    assert N[:12] in await page.locator("#runs-table tbody").inner_text()
    await page.get_by_role("button", name="Next page").click()
    await page.wait_for_url(lambda url: "page=2" in url)
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    assert trace_id("c")[:12] in await page.locator("#runs-table tbody").inner_text()
    await page.locator("#runs-table a.run-link").first.click()
    await page.wait_for_url(lambda url: f"/dashboard/run?trace={trace_id('c')}" in url)


async def check_run_page_context(page: Any, base: str, tmp_path: Path) -> None:
    await page.goto(f"{base}/dashboard/run?trace={N}")
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    box = page.locator("#scored-runs .turn.context").first
    text = await box.inner_text()
    assert "missing" not in text.lower(), text
    assert "faithfulness" in text and "tool result" in text, text
    scores = await page.locator("#scores-table tbody").inner_text()
    assert "tool results" in scores, scores


CHECKS = {
    "agents_and_minutes": check_agents_and_minutes,
    "refresh": check_refresh,
    "runs_page": check_runs_page,
    "run_page_context": check_run_page_context,
}


async def test_a_live_faithfulness_score_stores_the_context_it_read(service_config: ServiceConfig) -> None:
    """Real traffic through the real pipeline: an agent that called a tool and retrieved nothing is judged by
    faithfulness against the tool's result, and its stored score, and the run page's data, say so."""
    async with FakeJudgeServer() as judge:
        judge.script(
            "judge",
            Reply.json({"claims": ["The capital of France is Paris."]}),
            Reply.json({"verdicts": [{"verdict": "yes", "reason": "the search tool returned Paris"}]}),
        )
        service_config.judge = {"model": "openai/judge", "api_base": judge.base_url, "timeout_s": 5}
        service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
        service_config.scoring.poll_interval_s = 0.05
        service_config.collector.grpc.enabled = True  # the agent exports over OTLP/gRPC
        service_config.rules = [RuleConfig.model_validate({"name": "grounded", "scorers": ["faithfulness"]})]
        service = Service(service_config)
        await service.start()
        try:
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), agent_traces(1)) == "SUCCESS"
            sql = "SELECT TraceId, Status, Attributes['context.source'] FROM scores FINAL WHERE Scorer = 'faithfulness'"
            rows: list[Any] = []
            for _ in range(300):  # up to 30 s for the run to be assembled and judged
                rows = await asyncio.to_thread(service.store.internal_query, sql)
                if rows:
                    break
                await asyncio.sleep(0.1)
            [(trace, status, source)] = rows
            assert (status, source) == ("ok", "tool_results")
            status_code, run, _ = await get(service, f"/api/v1/dashboard/runs/{trace}")
            assert status_code == 200 and [s["context_source"] for s in run["scores"]] == ["tool_results"]
        finally:
            await service.shutdown()
