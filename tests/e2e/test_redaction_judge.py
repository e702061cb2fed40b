"""Redaction before the judge (#42): the fake judge, reached by litellm over real HTTP, never sees the values.

A run whose question, answer and tool result carry an email, a card number and an API key is scored by an
``llm_judge`` rule; what the fake OpenAI-compatible server received is the evidence.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanscore.cli.commands import main
from spanscore.config import ServiceConfig
from spanscore.redaction.config import RedactConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.api_client import api_call, api_json
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_dashboard import CHROMIUM, BrowserWatch
from tests.fakes.fake_openai import FakeJudgeServer, Reply

EMAIL = "jane.doe@example.org"
CARD = "4111 1111 1111 1111"
API_KEY = "sk-proj-" + "Xq7Lm2Vb9Rt4Kp8Wz3Hn6Jc1Fd5Gs0Ya"
JUDGE_RULE = {
    "name": "answer-check",
    "scorers": [
        {
            "name": "llm_judge",
            "options": {
                "id": "answer_meaning",
                "instructions": "You check an agent's answer.",
                "analyze": {
                    "prompt": "Question: {input}\nAnswer: {output}\nTool results: {context}\nIs it right?",
                    "schema": {
                        "type": "object",
                        "properties": {"ok": {"type": "integer", "enum": [0, 1]}},
                        "required": ["ok"],
                    },
                },
                "score": {"field": "ok"},
            },
        }
    ],
}


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def sensitive_run() -> list:  # type: ignore[type-arg]
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "billing-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent billing") as root:
        question = f"I am {EMAIL}, please charge card {CARD} again; my key is {API_KEY}"
        root.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "billing",
                "gen_ai.input.messages": _messages("user", question),
                "gen_ai.output.messages": _messages("assistant", f"Done: I wrote to {EMAIL} about card {CARD}."),
            }
        )
        with tracer.start_as_current_span("execute_tool lookup") as tool:
            tool.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.arguments": json.dumps({"email": EMAIL}),
                    "gen_ai.tool.call.result": f"customer {EMAIL} card {CARD} token {API_KEY}",
                }
            )
    provider.shutdown()
    return list(memory.get_finished_spans())


async def _wait_rows(service: Service, sql: str, expected: int, wait_s: float = 30.0) -> list[tuple]:  # type: ignore[type-arg]
    deadline = time.monotonic() + wait_s
    while True:
        rows = await asyncio.to_thread(service.store.internal_query, sql)
        if len(rows) >= expected or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(0.2)


async def test_the_judge_receives_placeholders_not_the_values(service_config: ServiceConfig) -> None:
    async with FakeJudgeServer() as judge:
        judge.script("judge", Reply.json({"ok": 1}))
        service_config.judge = {"model": "openai/judge", "api_base": judge.base_url, "timeout_s": 5}
        service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
        service_config.scoring.poll_interval_s = 0.05
        service_config.rules = [RuleConfig.model_validate(JUDGE_RULE)]
        service = Service(service_config)
        await service.start()
        try:
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), sensitive_run()) == "SUCCESS"
            rows = await _wait_rows(service, "SELECT Score, Status, TraceId FROM scores FINAL", 1)
            assert [row[:2] for row in rows] == [(1.0, "ok")]
            port = service.api.port
            run = await asyncio.to_thread(api_json, port, f"/api/v1/dashboard/runs/{rows[0][2]}")
            metrics = await asyncio.to_thread(_metrics, port)
            shown = await _run_page_judge_sent(port, rows[0][2])
        finally:
            await service.shutdown()
    if shown is not None:  # the page itself, where Chromium is installed
        assert "masked: card=3, email=3, secret=2" in shown and "<EMAIL_1>" in shown and EMAIL not in shown
    # The run page's "What was scored": the text as sent (placeholders) and the counts, never the values.
    (score,) = run["scores"]
    assert score["judge_redactions"] == "card=3, email=3, secret=2"
    assert "<EMAIL_1>" in score["judge_sent"] and EMAIL not in json.dumps(run["scores"])
    # /metrics counts redactions per rule and detector.
    assert 'spanscore_judge_redactions_total{detector="email",rule="answer-check"} 3.0' in metrics, metrics[-2000:]
    sent = json.dumps(judge.requests_for("judge"))
    assert len(judge.requests_for("judge")) == 1
    for value in (EMAIL, "4111 1111 1111 1111", "4111111111111111", API_KEY, "Xq7Lm2Vb9Rt4Kp8Wz3Hn6Jc1Fd5Gs0Ya"):
        assert value not in sent
    # The same email in the question, the answer and the tool result is one placeholder throughout.
    prompt = judge.answers[0].prompt if judge.answers else ""
    assert prompt.count("<EMAIL_1>") == 3 and "<EMAIL_2>" not in prompt, prompt
    assert prompt.count("<CARD_1>") == 3 and prompt.count("<SECRET_1>") == 2, prompt


async def _run_page_judge_sent(port: int, trace_id: str) -> str | None:
    """The run page's "What was scored" block of what the judge was sent, as Chromium renders it."""
    if CHROMIUM is None:
        return None
    from playwright.async_api import async_playwright

    base = f"http://127.0.0.1:{port}"
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = await browser.new_page()
            watch = BrowserWatch(base)
            watch.attach(page)
            await page.goto(f"{base}/dashboard/run?trace={trace_id}")
            await page.wait_for_selector("body[data-state=ready]", timeout=20_000)
            text = await page.locator("#scored-runs .judge-sent").inner_text()
        finally:
            await browser.close()
    assert watch.problems == []
    return str(text)


def _spooled_bytes(spool_dir: str) -> bytes:
    """Everything left in the spool directory (segments, dead letters) after the service stopped."""
    spool = Path(spool_dir)
    return b"".join(path.read_bytes() for path in spool.rglob("*") if path.is_file()) if spool.is_dir() else b""


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        return str(response.read().decode("utf-8"))


def _put(port: int, rules: list[dict]) -> tuple[int, dict]:  # type: ignore[type-arg]
    return api_call(port, "/api/v1/rules", {"rules": rules}, method="PUT")  # type: ignore[no-any-return]


async def test_a_token_holder_can_add_to_the_policy_but_not_turn_it_off(service_config: ServiceConfig) -> None:
    """The operator's default masks emails only; over the rules API a rule can add the operator's card set,
    but emptying its own ``redact`` or naming a set the file lacks neither unmasks nor defines anything."""
    service_config.redact = RedactConfig.model_validate(
        {"default": "contacts", "sets": {"contacts": {"detectors": ["email"]}, "payments": {"detectors": ["card"]}}}
    )
    async with FakeJudgeServer() as judge:
        judge.script("judge", Reply.json({"ok": 1}), Reply.json({"ok": 1}))
        service_config.judge = {"model": "openai/judge", "api_base": judge.base_url, "timeout_s": 5}
        service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
        service_config.scoring.poll_interval_s = 0.05
        service_config.rules = [RuleConfig.model_validate(JUDGE_RULE)]
        service = Service(service_config)
        await service.start()
        try:
            port = service.api.port
            widened = {**JUDGE_RULE, "redact": ["payments"]}
            status, body = await asyncio.to_thread(_put, port, [{**widened, "redact": ["nothing"]}])
            assert status == 400 and "no set named 'nothing'" in json.dumps(body), body
            status, body = await asyncio.to_thread(_put, port, [{**JUDGE_RULE, "redact": []}])
            assert status == 200, body
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), sensitive_run()) == "SUCCESS"
            await _wait_rows(service, "SELECT Score FROM scores FINAL", 1)
            status, body = await asyncio.to_thread(_put, port, [{**widened, "name": "with-cards"}])
            assert status == 200, body
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), sensitive_run()) == "SUCCESS"
            await _wait_rows(service, "SELECT Score FROM scores FINAL", 2)
        finally:
            await service.shutdown()
    first, second = (answer.prompt for answer in judge.answers)
    assert EMAIL not in first and "<EMAIL_1>" in first and CARD in first  # the default holds with redact: []
    assert EMAIL not in second and CARD not in second and "<CARD_1>" in second  # the added set applies too


async def test_rules_preview_shows_what_the_judge_would_be_sent_redacted(
    service_config: ServiceConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    service_config.judge = {"model": "openai/judge", "api_base": "http://127.0.0.1:9/v1", "timeout_s": 5}
    service = Service(service_config)
    await service.start()
    try:
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), sensitive_run()) == "SUCCESS"
        await _wait_rows(service, "SELECT TraceId FROM otel_traces", 2)
        port = service.api.port
        body = {"rule": "answer-check", "since": "1h", "rules": [JUDGE_RULE]}
        status, answer = await asyncio.to_thread(api_call, port, "/api/v1/rules/preview", body)
        assert status == 200, answer
        (shown,) = answer["would_send"]
        assert shown["scorer"] == "answer_meaning" and shown["masked"] == {"card": 3, "email": 3, "secret": 2}
        assert "<EMAIL_1>" in shown["text"] and EMAIL not in json.dumps(answer) and API_KEY not in json.dumps(answer)
        file = tmp_path / "rules.yaml"
        file.write_text(yaml.safe_dump({"rules": [JUDGE_RULE]}), encoding="utf-8")
        monkeypatch.setenv("SPANSCORE_API__PORT", str(port))
        argv = ["rules", "preview", "answer-check", "--file", str(file), "--since", "1h"]
        assert await asyncio.to_thread(main, argv) == 0
        out = capsys.readouterr().out
        assert "would send (masked: card=3, email=3, secret=2)" in out and "<CARD_1>" in out and EMAIL not in out
    finally:
        await service.shutdown()


async def test_collector_redact_masks_before_the_spool_and_the_store(service_config: ServiceConfig) -> None:
    service_config.collector.redact = "all"
    service = Service(service_config)
    await service.start()
    try:
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), sensitive_run()) == "SUCCESS"
        sql = "SELECT toString(SpanAttributes) FROM otel_traces ORDER BY SpanName"
        stored = " ".join(row[0] for row in await _wait_rows(service, sql, 2))
        metrics = await asyncio.to_thread(_metrics, service.api.port)
    finally:
        await service.shutdown()
    for value in (EMAIL, CARD, API_KEY):
        assert value not in stored
    emails = set(re.findall(r"<EMAIL_[0-9a-f]{8}>", stored))
    assert len(emails) == 1 and stored.count(emails.pop()) == 4  # one email, four places, two spans
    assert EMAIL.encode() not in await asyncio.to_thread(_spooled_bytes, service_config.storage.spool_dir or "")
    assert 'spanscore_ingest_redactions_total{detector="email"} 4.0' in metrics
