"""What was scored is visible: the stored run equals the run the scorers received, via the API and the CLI.

A real service scores one SDK trace (system prompt, user question, a tool call with
arguments and result, retrieved documents, ground truth); the ``Run`` handed to the
scoring workers is recorded as it is submitted, and what ``/api/v1/runs/<trace>``,
the dashboard's run endpoint and ``spanscore runs show`` return must be that run.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanscore.cli import commands as cli
from spanscore.config import ServiceConfig
from spanscore.run import Run
from spanscore.sampling.rules import RuleConfig
from spanscore.scoring.workers import ScoringJob
from spanscore.server.service import Service
from spanscore.storage.scored_runs import run_view
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_dashboard import CHROMIUM as CHROMIUM_PATH
from tests.e2e.test_dashboard import BrowserWatch, needs_chromium

SYSTEM = "You are a terse travel assistant."
QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris, 21 degrees."
DOCUMENT = "Paris forecast: sunny, 21C."


def _parts(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def weather_trace() -> list[Any]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "travel-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent weather") as root:
        root.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "weather",
                "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
                "gen_ai.input.messages": _parts("user", QUESTION),
                "gen_ai.output.messages": _parts("assistant", ANSWER),
                "gen_ai.retrieval.documents": json.dumps([{"content": DOCUMENT}]),
                "spanscore.ground_truth": "sunny",
            }
        )
        with tracer.start_as_current_span("execute_tool get_weather") as tool:
            tool.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.arguments": json.dumps({"city": "Paris"}),
                    "gen_ai.tool.call.result": "sunny, 21C",
                }
            )
    provider.shutdown()
    return list(memory.get_finished_spans())


@pytest.fixture
def service_config(service_config: ServiceConfig) -> ServiceConfig:
    service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    service_config.scoring.poll_interval_s = 0.05
    service_config.rules = [RuleConfig.model_validate({"name": "all", "scorers": ["completeness"]})]
    return service_config


async def _get(service: Service, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    assert service.api is not None
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{service.api.port}{path}", headers=headers) as response:
            return response.status, await response.json()


async def _scored(service: Service, trace_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        status, body = await _get(service, f"/api/v1/runs/{trace_id}")
        if status == 200 or time.monotonic() > deadline:
            assert status == 200, body
            return body
        await asyncio.sleep(0.1)


async def test_the_stored_run_is_the_run_the_scorers_received(
    service: Service, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert service.live is not None and service.api is not None
    received: list[Run] = []
    submit = service.live.workers.submit

    async def recording_submit(job: ScoringJob) -> None:
        received.append(job.run)
        await submit(job)

    service.live.workers.submit = recording_submit  # type: ignore[method-assign]
    spans = weather_trace()
    trace_id = f"{spans[0].get_span_context().trace_id:032x}"
    assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"

    body = await _scored(service, trace_id.upper())
    assert len(received) == 1 and body["runs"] == [run_view(received[0])]
    stored = body["runs"][0]
    assert stored["system"] == SYSTEM and stored["context"] == [DOCUMENT] and stored["ground_truth"] == "sunny"
    assert [(m["role"], m["content"]) for m in stored["input"]] == [("user", QUESTION)]
    assert [(m["role"], m["content"]) for m in stored["output"]] == [("assistant", ANSWER)]
    assert stored["answer"] == ANSWER  # what the run page shows as the answer, and the scorers read
    assert [(c["name"], c["arguments"], c["result"]) for c in stored["tool_calls"]] == [
        ("get_weather", {"city": "Paris"}, "sunny, 21C")
    ]
    assert stored["sources"]["input"].endswith("gen_ai.input.messages")
    assert stored["sources"]["system"].endswith("gen_ai.system_instructions")

    status, dashboard = await _get(service, f"/api/v1/dashboard/runs/{trace_id}")
    assert status == 200 and dashboard["scored_runs"] == body["runs"]
    status, missing = await _get(service, f"/api/v1/runs/{'e' * 32}")
    assert status == 404 and "no scored run stored" in missing["error"]
    status, foreign = await _get(service, f"/api/v1/runs/{trace_id}", {"Origin": "http://attacker.example"})
    assert status == 403 and "Origin" in foreign["error"]  # the API's browser guard covers the new route
    status, bad = await _get(service, "/api/v1/runs/not-a-trace")
    assert status == 400 and "32 hexadecimal" in bad["error"]

    config = tmp_path / "cli.yaml"
    config.write_text(f"api:\n  port: {service.api.port}\n", encoding="utf-8")
    capsys.readouterr()
    assert await asyncio.to_thread(cli.main, ["runs", "show", trace_id, "-c", str(config), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == body["runs"]
    assert await asyncio.to_thread(cli.main, ["runs", "show", trace_id, "-c", str(config)]) == 0
    text = capsys.readouterr().out
    for needle in (SYSTEM, f"[user] {QUESTION}", f"[assistant] {ANSWER}", "get_weather(city='Paris') -> sunny, 21C",
                   f"- {DOCUMENT}", "[from otel_genai:gen_ai.input.messages]"):  # fmt: skip
        assert needle in text, (needle, text)


@needs_chromium
@pytest.mark.slow
async def test_run_page_shows_the_scored_conversation(service: Service, tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    assert service.api is not None
    spans = weather_trace()
    trace_id = f"{spans[0].get_span_context().trace_id:032x}"
    assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
    await _scored(service, trace_id)
    base = f"http://127.0.0.1:{service.api.port}"
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM_PATH, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1200})
            watch = BrowserWatch(base)
            watch.attach(page)
            await page.goto(f"{base}/dashboard/run?trace={trace_id}")
            await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
            await page.screenshot(path=str(tmp_path / "scored-run.png"), full_page=True)
            if shot := os.environ.get("SPANSCORE_SCREENSHOT"):
                await page.screenshot(path=shot, full_page=True)
            turns = await page.locator("#scored-runs .turn").all_inner_texts()
        finally:
            await browser.close()
    kinds = [text.split("\n", 1)[0].split(" · ")[0].upper() for text in turns]
    assert kinds == ["SYSTEM", "USER", "TOOL CALL 1", "ANSWER", "RETRIEVED CONTEXT", "GROUND TRUTH"], turns
    for needle, position in ((SYSTEM, 0), (QUESTION, 1), ('get_weather({"city":"Paris"})', 2), ("sunny, 21C", 2),
                             (ANSWER, 3), (DOCUMENT, 4)):  # fmt: skip
        assert needle in turns[position], (needle, turns)
    assert "gen_ai.input.messages" in turns[1]
    assert watch.problems == []


def whole_turn_trace() -> list[Any]:
    """An agent span whose output is the whole turn, as Microsoft Agent Framework writes it (#29)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "travel-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    turn = [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "sunny, 21C"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]},
    ]
    with provider.get_tracer("agent").start_as_current_span("invoke_agent weather") as root:
        root.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "weather",
                "gen_ai.input.messages": _parts("user", QUESTION),
                "gen_ai.output.messages": json.dumps(turn),
            }
        )
    provider.shutdown()
    return list(memory.get_finished_spans())


@needs_chromium
@pytest.mark.slow
async def test_run_page_shows_the_scored_answer_of_a_whole_turn_output(service: Service) -> None:
    """The page shows the turn's steps, then one answer box holding exactly the text the scorers read."""
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    assert service.api is not None
    spans = whole_turn_trace()
    trace_id = f"{spans[0].get_span_context().trace_id:032x}"
    assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
    body = await _scored(service, trace_id)
    assert body["runs"][0]["answer"] == ANSWER
    base = f"http://127.0.0.1:{service.api.port}"
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM_PATH, headless=True)
        try:
            page = await browser.new_page()
            await page.goto(f"{base}/dashboard/run?trace={trace_id}")
            await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
            turns = await page.locator("#scored-runs .turn").all_inner_texts()
        finally:
            await browser.close()
    titles = [text.split("\n", 1)[0].split(" · ")[0].upper() for text in turns]
    answers = [text for text in turns if text.upper().startswith("ANSWER")]
    assert titles.count("ANSWER") == 1 and answers[0].rstrip().endswith(ANSWER), turns
    assert "TOOL RESULT" in titles and not any(f", {ANSWER}" in text for text in turns), turns
