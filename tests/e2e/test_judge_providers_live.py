"""A live service judging with Anthropic's wire format (#32): the stored score says how the verdict was asked.

The config's top-level ``judge:`` names ``anthropic/claude-3-5-haiku-latest`` behind a loopback Anthropic
server; litellm sends that model a forced tool call (not the ``json_schema`` spanscore asks for) and has no
price for it. The stored score row must say both: ``judge.mode = tool_call``, ``judge.cost = unknown``.
"""

from __future__ import annotations

import asyncio

import pytest

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_judge import _rows
from tests.e2e.test_live_scoring import agent_traces
from tests.fakes.fake_openai import Reply
from tests.fakes.fake_providers import FakeProviderServer


async def test_stored_scores_record_the_mode_sent_and_an_unknown_cost(
    service_config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_KEY", "k-live")
    async with FakeProviderServer("anthropic") as judge:
        verdict = {"verdicts": [{"verdict": "no", "reason": "a polite factual answer"}]}
        judge.script("claude-3-5-haiku-latest", Reply.json(verdict), Reply.json(verdict))
        service_config.judge = {
            "model": "anthropic/claude-3-5-haiku-latest",
            "api_base": judge.api_base,
            "api_key_env": "JUDGE_KEY",
            "timeout_s": 5,
            "worker_processes": 0,
        }
        service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
        service_config.scoring.poll_interval_s = 0.05
        service_config.rules = [RuleConfig.model_validate({"name": "safety", "scorers": ["toxicity"]})]
        service = Service(service_config)
        await service.start()
        try:
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), agent_traces(2)) == "SUCCESS"
            rows = await _rows(
                service,
                "SELECT Score, Status, Attributes['judge.mode'], Attributes['judge.cost'], CostUsd FROM scores FINAL",
                2,
            )
        finally:
            await service.shutdown()
    assert rows == [(0.0, "ok", "tool_call", "unknown", None)] * 2  # CostUsd NULL: unknown, not 0 (#40 item 6)
    assert {seen.path for seen in judge.requests} == {"/v1/messages"}
    assert all(seen.body.get("tool_choice", {}).get("type") == "tool" for seen in judge.requests)
    assert {seen.headers.get("x-api-key") for seen in judge.requests} == {"k-live"}
