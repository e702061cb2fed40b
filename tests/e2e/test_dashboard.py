"""The built-in dashboard against a running service: its JSON endpoints, and the pages in headless Chromium.

The store is seeded through the same insert calls the live path uses (spans, score rows,
decision rows), with scores and decisions chosen so every number on the page is known:
three scored traces, two judge scorers (one higher-is-better, one lower-is-better), one code
scorer that errored, and coverage below 1 for one rule. The browser test needs a Chromium on
the machine (Debian: ``apt-get install chromium``) and drives it with playwright's Python
package (no browser download); without one it is skipped, and the endpoint checks still run.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from spanscore.config import ServiceConfig
from spanscore.records import SpanRecord
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from spanscore.storage.scores import DecisionRow, ScoreRow, score_id

TOKEN = "dashboard-test-token"
NOW_NS = time.time_ns()
RUN_NS = NOW_NS - 30 * 60 * 10**9  # half an hour ago: inside the page's default 24h window
TRACES = {name: f"{index:x}" * 32 for index, name in ((10, "a"), (11, "b"), (12, "c"))}
JUDGE = "judge-1"

# (trace, rule, scorer, higher_is_better, score, label, status, reason, judge cost)
SCORES = [
    ("a", "support-quality", "faithfulness", True, 0.9, "pass", "ok", "Every claim is backed by the context.", 0.002),
    ("b", "support-quality", "faithfulness", True, 0.7, "pass", "ok", "One claim is only partly supported.", 0.002),
    ("c", "support-quality", "faithfulness", True, 0.2, "fail", "ok", "Contradicts the refund policy quoted.", 0.004),
    ("a", "support-quality", "toxicity", False, 0.1, "pass", "ok", "Polite throughout.", 0.001),
    ("b", "support-quality", "toxicity", False, 0.8, "fail", "ok", "Insults the user in the second sentence.", 0.003),
    ("c", "cheap-checks", "completeness", True, None, "", "error", "", 0.0),
]
# The worst first: lower-is-better scores count negated, so toxicity 0.8 heads the list.
WORST_ORDER = [
    ("toxicity", 0.8, "b"),
    ("toxicity", 0.1, "a"),
    ("faithfulness", 0.2, "c"),
    ("faithfulness", 0.7, "b"),
    ("faithfulness", 0.9, "a"),
]
DECISIONS = [("support-quality", trace, "sampled") for trace in ("a", "b", "c")] + [
    ("support-quality", "d", "sampled_out"),
    ("support-quality", "e", "over_budget"),
    ("support-quality", "f", "filtered_out"),
    ("cheap-checks", "a", "sampled"),
    ("cheap-checks", "b", "sampled"),
    ("cheap-checks", "c", "sampled"),
]
TARGET_OF = {"support-quality": "run", "cheap-checks": "llm"}  # cheap-checks scores single LLM calls
SPAN_NAMES = ("invoke_agent support", "chat gpt-x", "execute_tool search_policies")


def chromium_path() -> str | None:
    return os.environ.get("SPANSCORE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def trace_id(name: str) -> str:
    return TRACES.get(name, f"{ord(name):032x}")


def agent_spans(name: str) -> list[SpanRecord]:
    trace = trace_id(name)
    root, chat, tool = (f"{trace[:12]}{n:04x}" for n in (1, 2, 3))
    start = RUN_NS
    return [
        SpanRecord(trace, root, "", SPAN_NAMES[0], "Internal", start, start + 900_000_000, "support-bot",
                   {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"}),
        SpanRecord(trace, chat, root, SPAN_NAMES[1], "Client", start + 10**8, start + 6 * 10**8, "support-bot",
                   {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-x"}),
        SpanRecord(trace, tool, root, SPAN_NAMES[2], "Internal", start + 7 * 10**8, start + 8 * 10**8, "support-bot",
                   {"gen_ai.tool.name": "search_policies"}, status_code="Error", status_message="timeout"),
    ]  # fmt: skip


def score_rows() -> list[ScoreRow]:
    rows = []
    for name, rule, scorer, higher, score, label, status, reason, cost in SCORES:
        trace = trace_id(name)
        root = agent_spans(name)[0].span_id
        judged = scorer != "completeness"
        rows.append(
            ScoreRow(
                score_id=score_id(rule, scorer, "1", trace, root), run_timestamp_ns=RUN_NS, trace_id=trace,
                span_id=root, run_id=f"run-{name}", service_name="support-bot", agent_name="support", model="gpt-x",
                session_id="", user_id="", rule=rule, scorer=scorer, scorer_version="1", score=score, label=label,
                reason=reason, status=status, error="scorer crashed" if status == "error" else "", sample_rate=1.0,
                higher_is_better=higher, judge_model=JUDGE if judged else "", input_tokens=100 if judged else 0,
                output_tokens=20 if judged else 0, cost_usd=cost, duration_ms=5.0, ready_reason="root_ended",
                run_duration_ms=900.0, run_error="", target=TARGET_OF[rule],
            )
        )  # fmt: skip
    return rows


def decision_rows() -> list[DecisionRow]:
    return [
        DecisionRow(RUN_NS, trace_id(name), agent_spans(name)[0].span_id, f"run-{name}", "support-bot", "support",
                    rule, decision, 1.0 if decision == "sampled" else 0.0, decision, "root_ended",
                    target=TARGET_OF[rule])
        for rule, name, decision in DECISIONS
    ]  # fmt: skip


@pytest.fixture
def service_config(service_config: ServiceConfig) -> ServiceConfig:
    service_config.api.auth_tokens = [TOKEN]
    service_config.collector.grpc.enabled = False
    return service_config


@pytest.fixture
async def seeded(service: Service) -> Service:
    await service.store.insert_spans([span for name in TRACES for span in agent_spans(name)])
    await service.store.insert_scores(score_rows())
    await service.store.insert_decisions(decision_rows())
    return service


def api_url(service: Service, path: str) -> str:
    assert service.api is not None
    return f"http://127.0.0.1:{service.api.port}{path}"


async def get(service: Service, path: str, token: str | None = TOKEN) -> tuple[int, Any, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session:
        async with session.get(api_url(service, path), headers=headers, allow_redirects=False) as response:
            body: Any = await response.json() if response.content_type == "application/json" else await response.read()
            return response.status, body, response.headers


def check_seeded_numbers(scorers: dict[str, Any], trend: dict[str, Any], worst: dict[str, Any],
                         coverage: dict[str, Any], cost: dict[str, Any]) -> None:  # fmt: skip
    """The endpoints' answers (unfiltered, 24h) against the seeded rows."""
    by_scorer = {row["scorer"]: row for row in scorers["scorers"]}
    assert set(by_scorer) == {"faithfulness", "toxicity", "completeness"}
    assert by_scorer["faithfulness"]["scored"] == 3 and by_scorer["faithfulness"]["higher_is_better"] is True
    assert by_scorer["faithfulness"]["mean"] == pytest.approx(0.6)
    assert by_scorer["faithfulness"]["pass_rate"] == pytest.approx(2 / 3)
    assert by_scorer["toxicity"]["mean"] == pytest.approx(0.45) and by_scorer["toxicity"]["higher_is_better"] is False
    assert by_scorer["completeness"] == by_scorer["completeness"] | {"scored": 0, "mean": None, "errors": 1}

    points = trend["points"]
    for scorer, scores in (("faithfulness", [0.9, 0.7, 0.2]), ("toxicity", [0.1, 0.8])):
        mine = [p for p in points if p["scorer"] == scorer]
        assert sum(p["scored"] for p in mine) == len(scores)
        assert sum(p["mean"] * p["scored"] for p in mine) == pytest.approx(sum(scores))
        assert all(p["time"] <= NOW_NS / 1e9 for p in mine)

    assert [(r["scorer"], r["score"], r["trace_id"]) for r in worst["runs"]] == [
        (scorer, score, trace_id(name)) for scorer, score, name in WORST_ORDER
    ]
    assert worst["runs"][0]["reason"] == "Insults the user in the second sentence."

    rules: dict[str, list[int]] = {}
    for day in coverage["points"]:
        totals = rules.setdefault(day["rule"], [0, 0, 0, 0, 0])
        for i, key in enumerate(("candidates", "scored", "sampled_out", "over_budget", "filtered_out")):
            totals[i] += day[key]
    assert rules == {"support-quality": [5, 3, 1, 1, 1], "cheap-checks": [3, 3, 0, 0, 0]}

    assert {d["judge_model"] for d in cost["points"]} == {JUDGE}
    assert sum(d["scores"] for d in cost["points"]) == 5
    assert sum(d["cost_usd"] for d in cost["points"]) == pytest.approx(0.012)
    assert sum(d["input_tokens"] for d in cost["points"]) == 500


async def test_dashboard_endpoints_answer_the_seeded_numbers_and_refuse_bad_input(seeded: Service) -> None:
    answers = {}
    for name in ("scorers", "trend", "worst", "coverage", "cost"):
        status, answers[name], headers = await get(seeded, f"/api/v1/dashboard/{name}?since=24h")
        assert status == 200, answers[name]
        assert headers["Cache-Control"] == "no-store"
    check_seeded_numbers(**answers)
    assert answers["scorers"]["rules"] == []  # the seeded service scores with no rules; see the rule test below

    status, only, _ = await get(seeded, "/api/v1/dashboard/worst?scorer=faithfulness&limit=2")
    assert status == 200 and [r["score"] for r in only["runs"]] == [0.2, 0.7]
    status, daily, _ = await get(seeded, "/api/v1/dashboard/trend?scorer=toxicity&by=day&since=7d")
    assert status == 200 and {p["scorer"] for p in daily["points"]} == {"toxicity"}
    assert all(p["time"] % 3600 == 0 for p in daily["points"])
    status, rule_only, _ = await get(seeded, "/api/v1/dashboard/coverage?rule=cheap-checks")
    assert status == 200 and {d["rule"] for d in rule_only["points"]} == {"cheap-checks"}
    # Every chart can be narrowed to one target: the LLM-call rule's numbers apart from the run rule's.
    status, llm, _ = await get(seeded, "/api/v1/dashboard/coverage?target=llm")
    assert status == 200 and {(d["rule"], d["target"], d["candidates"]) for d in llm["points"]} == {
        ("cheap-checks", "llm", 3)
    }
    status, llm, _ = await get(seeded, "/api/v1/dashboard/scorers?target=llm")
    assert status == 200 and [(s["scorer"], s["errors"]) for s in llm["scorers"]] == [("completeness", 1)]
    status, runs_only, _ = await get(seeded, "/api/v1/dashboard/trend?target=run")
    assert status == 200 and {p["scorer"] for p in runs_only["points"]} == {"faithfulness", "toxicity"}
    status, runs_only, _ = await get(seeded, "/api/v1/dashboard/worst?target=run")
    assert status == 200 and {r["target"] for r in runs_only["runs"]} == {"run"} and len(runs_only["runs"]) == 5
    status, none, _ = await get(seeded, "/api/v1/dashboard/cost?target=session")
    assert status == 200 and none["points"] == []

    status, run, _ = await get(seeded, f"/api/v1/dashboard/runs/{trace_id('b').upper()}")
    assert status == 200
    assert [s["name"] for s in run["spans"]] == list(SPAN_NAMES)
    assert {s["scorer"]: s["reason"] for s in run["scores"]} == {
        "faithfulness": "One claim is only partly supported.",
        "toxicity": "Insults the user in the second sentence.",
    }
    assert {(d["rule"], d["decision"]) for d in run["decisions"]} == {
        ("support-quality", "sampled"),
        ("cheap-checks", "sampled"),
    }

    for path, status_wanted, message in [
        ("/api/v1/dashboard/worst?since=forever", 400, "since: Value error, must look like"),
        ("/api/v1/dashboard/worst?since=9999d", 400, "must be between"),
        ("/api/v1/dashboard/worst?scorer=x%27%20OR%20%271%27%3D%271", 400, "scorer: String should match pattern"),
        ("/api/v1/dashboard/trend?by=week", 400, "by: Input should be 'minute', 'hour' or 'day'"),
        ("/api/v1/dashboard/worst?target=span", 400, "target: Value error, must be one of run, llm, tool"),
        ("/api/v1/dashboard/worst?limit=0", 400, "limit: Input should be greater than or equal to 1"),
        ("/api/v1/dashboard/cost?sql=SELECT%201", 400, "sql: Extra inputs are not permitted"),
        ("/api/v1/dashboard/coverage?scorer=toxicity", 400, "scorer: Extra inputs are not permitted"),
        ("/api/v1/dashboard/scorers?since=1h&since=2h", 400, "'since' is given more than once"),
        ("/api/v1/dashboard/runs/not-a-trace", 400, "32 hexadecimal characters"),
        (f"/api/v1/dashboard/runs/{'e' * 32}", 404, "no spans, scores or decisions"),
    ]:
        status, body, _ = await get(seeded, path)
        assert (status, message in body["error"]) == (status_wanted, True), (path, body)

    for token in (None, "wrong"):
        status, body, _ = await get(seeded, "/api/v1/dashboard/scorers", token=token)
        assert status == 401, body
        status, body, _ = await get(seeded, f"/api/v1/dashboard/runs/{trace_id('a')}", token=token)
        assert status == 401, body


async def test_dashboard_pages_and_assets_are_served_from_the_package(seeded: Service) -> None:
    status, _, headers = await get(seeded, "/dashboard", token=None)
    assert status == 302 and headers["Location"] == "/dashboard/"
    for path, content_type, needle in [
        ("/dashboard/", "text/html", b"<title>spanscore dashboard</title>"),
        ("/dashboard/run", "text/html", b'<table id="spans-table">'),
        ("/dashboard/static/vendor/uPlot.iife.min.js", "text/javascript", b"uPlot"),
        ("/dashboard/static/vendor/uPlot.min.css", "text/css", b".uplot"),
        ("/dashboard/static/vendor/uPlot.LICENSE.txt", "text/plain", b"MIT License"),
        ("/dashboard/static/dashboard.js", "text/javascript", b"renderTrend"),
        ("/dashboard/static/charts.js", "text/javascript", b"uPlot"),
    ]:
        status, body, headers = await get(seeded, path, token=None)  # pages hold no data: no token needed
        assert status == 200 and headers["Content-Type"].startswith(content_type), path
        assert needle in body, path
        assert "script-src 'self'" in headers["Content-Security-Policy"]
    for path in ("/dashboard/static/nope.js", "/dashboard/static/..%2F..%2Fapi.py", "/dashboard/static/__init__.py"):
        status, _, _ = await get(seeded, path, token=None)
        assert status == 404, path


CHROMIUM = chromium_path()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on this machine (Debian: apt-get install chromium; or set SPANSCORE_CHROMIUM)"
)

COLOR_PIXELS_JS = """([selector, rgb]) => {
  const canvas = document.querySelector(selector);
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let count = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (Math.abs(data[i] - rgb[0]) < 12 && Math.abs(data[i + 1] - rgb[1]) < 12 && Math.abs(data[i + 2] - rgb[2]) < 12
        && data[i + 3] > 200) count++;
  }
  return count;
}"""
# Series colours in dashboard.js, in the order of the sorted series keys.
FIRST, SECOND, THIRD = (31, 95, 191), (194, 65, 12), (21, 128, 61)


class BrowserWatch:
    """What a page did that a person would call broken: console errors, page errors, failed or foreign requests."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.problems: list[str] = []
        self.api_answers: dict[str, Any] = {}

    def attach(self, page: Any) -> None:
        page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("requestfailed", lambda request: self.problems.append(f"request failed: {request.url}"))
        page.on("request", self._request)
        page.on("response", self._response)

    def _request(self, request: Any) -> None:
        if not request.url.startswith((self.base, "data:")):
            self.problems.append(f"request outside the service: {request.url}")

    async def _response(self, response: Any) -> None:
        path = response.url.removeprefix(self.base)
        if path.startswith("/api/v1/dashboard/") and response.ok:
            self.api_answers[path.split("?")[0].removeprefix("/api/v1/dashboard/")] = await response.json()


@needs_chromium
@pytest.mark.slow
async def test_dashboard_in_headless_chromium(seeded: Service, tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    base = api_url(seeded, "")
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            await check_dashboard_and_run_page(browser, base, tmp_path)
            await check_sign_in_form(browser, base)
            await check_narrow_screen(browser, base, tmp_path)
        finally:
            await browser.close()


async def check_dashboard_and_run_page(browser: Any, base: str, tmp_path: Path) -> None:
    page = await browser.new_page(viewport={"width": 1280, "height": 1400})
    watch = BrowserWatch(base)
    watch.attach(page)
    await page.goto(f"{base}/dashboard/#token={TOKEN}")
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    await page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)

    assert page.url == f"{base}/dashboard/"  # the token left the address bar at once
    assert await page.evaluate("sessionStorage.getItem('spanscore.apiToken')") == TOKEN
    assert set(watch.api_answers) == {"scorers", "trend", "worst", "coverage", "cost", "usage"}
    usage = watch.api_answers.pop("usage")  # the usage panel (OTLP metrics, test_otlp_metrics.py): none seeded here
    assert usage["points"] == []
    check_seeded_numbers(**watch.api_answers)

    for chart in ("trend-chart", "coverage-chart", "cost-chart"):
        assert await page.locator(f"#{chart} canvas").count() == 1, chart
    # The seeded service loads no rules, and the page says so rather than leaving empty charts unexplained.
    assert "No rules are loaded" in await page.locator("#status").inner_text()
    legend = await page.locator("#trend-chart .u-legend").inner_text()
    assert "faithfulness" in legend and "toxicity" in legend
    # Series are drawn in their colours (keys sorted: completeness has no mean, so no FIRST pixels).
    assert await page.evaluate(COLOR_PIXELS_JS, ["#trend-chart canvas", list(SECOND)]) > 20
    assert await page.evaluate(COLOR_PIXELS_JS, ["#trend-chart canvas", list(THIRD)]) > 20
    assert await page.evaluate(COLOR_PIXELS_JS, ["#coverage-chart canvas", list(FIRST)]) > 20
    assert await page.evaluate(COLOR_PIXELS_JS, ["#cost-chart canvas", list(FIRST)]) > 20
    assert await page.evaluate(COLOR_PIXELS_JS, ["#trend-chart canvas", list(FIRST)]) == 0

    scorer_rows = await page.locator("#scorer-table tbody tr").all_inner_texts()
    assert any(row.startswith("faithfulness") and "0.600" in row and "66.7%" in row for row in scorer_rows)
    worst_rows = await page.locator("#worst-table tbody tr").all_inner_texts()
    assert len(worst_rows) == len(WORST_ORDER)
    assert "toxicity" in worst_rows[0] and "0.800" in worst_rows[0] and "Insults the user" in worst_rows[0]
    coverage_text = await page.locator("#coverage-table tbody").inner_text()
    assert "support-quality" in coverage_text and "60.0%" in coverage_text
    assert "$0.0120" in await page.locator("#cost-total").inner_text()

    # Narrowed to LLM calls: only the rule that scores them is left, labelled with its target.
    await page.select_option("#target", "llm")
    await page.locator("#status", has_text="LLM calls only").wait_for(timeout=20_000)
    coverage_text = await page.locator("#coverage-table tbody").inner_text()
    assert "cheap-checks (llm)" in coverage_text and "support-quality" not in coverage_text
    assert [row.split("\t")[0] for row in await page.locator("#scorer-table tbody tr").all_inner_texts()] == [
        "completeness"
    ]
    await page.select_option("#target", "")
    await page.locator("#status", has_text="LLM calls only").wait_for(state="detached", timeout=20_000)

    await page.locator("#worst-table a.run-link").first.click()
    await page.wait_for_url(lambda url: url.startswith(f"{base}/dashboard/run?trace={trace_id('b')}&span="))
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    await page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
    span_rows = page.locator("#spans-table tbody tr")
    assert await span_rows.count() == 3
    names = [await span_rows.nth(i).locator("td.span-name").inner_text() for i in range(3)]
    assert [name.removesuffix(" scored").strip() for name in names] == list(SPAN_NAMES)
    root = agent_spans("b")[0].span_id
    assert await page.locator(f"#span-{root}").get_attribute("class") == "scored focus"
    scores_text = await page.locator("#scores-table tbody").inner_text()
    assert "Insults the user in the second sentence." in scores_text
    assert "One claim is only partly supported." in scores_text
    assert "timeout" in await page.locator("#spans-table tbody").inner_text()

    # A person adds a thumbs down with a comment: stored as a human score, shown at once in the scores table.
    await page.get_by_label("Comment").fill("Answered the wrong question.")
    await page.get_by_label("Your name (optional)").fill("ana")
    await page.get_by_role("button", name="Thumbs down").click()
    await page.locator("#feedback-status", has_text="Saved").wait_for(timeout=20_000)
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    scores_text = await page.locator("#scores-table tbody").inner_text()
    assert "source:human" in scores_text and "Answered the wrong question." in scores_text
    assert watch.problems == []
    await page.close()


async def check_narrow_screen(browser: Any, base: str, tmp_path: Path) -> None:
    """At 400 px the page never scrolls sideways: wide tables scroll inside themselves, charts fit."""
    page = await browser.new_page(viewport={"width": 400, "height": 900})
    await page.goto(f"{base}/dashboard/#token={TOKEN}")
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    await page.screenshot(path=str(tmp_path / "dashboard-400.png"), full_page=True)
    assert await page.evaluate("document.documentElement.scrollWidth") <= 400
    for chart in ("trend-chart", "coverage-chart", "cost-chart"):
        box = await page.locator(f"#{chart} canvas").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 400, chart
    await page.close()


async def check_sign_in_form(browser: Any, base: str) -> None:
    """A fresh tab without a token gets the sign-in form; the API's 401 is the only complaint."""
    context = await browser.new_context()
    page = await context.new_page()
    watch = BrowserWatch(base)
    watch.attach(page)
    await page.goto(f"{base}/dashboard/")
    await page.wait_for_selector("body[data-state=auth]", timeout=20_000)
    assert await page.locator("#login").is_visible()
    await page.get_by_label("API token").fill(TOKEN)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
    assert not await page.locator("#login").is_visible()
    assert await page.locator("#worst-table tbody tr").count() == len(WORST_ORDER)
    assert watch.problems and all("401" in problem for problem in watch.problems), watch.problems
    await context.close()


async def test_the_dashboard_names_the_rules_it_scores_with(service_config: ServiceConfig) -> None:
    service_config.rules = [
        RuleConfig.model_validate({"name": "cheap", "sample": 0.5, "scorers": ["completeness", "keyword_coverage"]})
    ]
    service = Service(service_config)
    await service.start()
    try:
        status, body, _ = await get(service, "/api/v1/dashboard/scorers?since=24h")
    finally:
        await service.shutdown()
    assert status == 200, body
    assert body["rules"] == [
        {"name": "cheap", "target": "run", "scorers": ["completeness", "keyword_coverage"], "sample": 0.5, "scales": {}}
    ]
