"""Issue #26: a scored run belongs to the service that sent it.

Two services that send the same (trace id, span id), by accident or on purpose, must not overwrite each
other's scored run: not in memory while the trace is assembled (the second copy of a span is refused and
counted), and not in storage once the first trace has left memory (``scored_runs`` is keyed by service too).
Real services, real OTLP/HTTP on loopback, the real embedded engine.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT_ID = "00f067aa0ba902b7"


def _agent_export(service_name: str, answer: str, trace_id: str = TRACE_ID) -> bytes:
    """One finished ``invoke_agent`` root span of ``service_name`` with a question and ``answer``."""
    now = time.time_ns()
    messages = [
        ("gen_ai.input.messages", "user", "What is the weather?"),
        ("gen_ai.output.messages", "assistant", answer),
    ]
    attributes = [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}] + [
        {
            "key": key,
            "value": {"stringValue": json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])},
        }
        for key, role, text in messages
    ]
    span = {
        "traceId": trace_id,
        "spanId": ROOT_ID,
        "name": "invoke_agent weather",
        "kind": 1,
        "startTimeUnixNano": str(now - 10**9),
        "endTimeUnixNano": str(now),
        "attributes": attributes,
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service_name}}]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}).encode()


def _configure(config: ServiceConfig, **runs: Any) -> ServiceConfig:
    config.collector.runs = config.collector.runs.model_copy(update={"quiet_period_s": 0.2, **runs})
    config.scoring.poll_interval_s = 0.05
    config.rules = [RuleConfig.model_validate({"name": "all", "scorers": ["completeness"]})]
    return config


async def _post(service: Service, body: bytes) -> None:
    assert service.http is not None
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"http://127.0.0.1:{service.http.port}/v1/traces", data=body, headers={"Content-Type": "application/json"}
        ) as response,
    ):
        assert response.status == 200, await response.text()


async def _runs(service: Service, expected: int, wait_s: float = 30.0) -> list[dict[str, Any]]:
    """The stored scored runs of the trace, once there are ``expected`` of them (or the wait ran out)."""
    assert service.api is not None
    deadline = time.monotonic() + wait_s
    while True:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{service.api.port}/api/v1/runs/{TRACE_ID}") as got,
        ):
            runs: list[dict[str, Any]] = (await got.json()).get("runs", []) if got.status == 200 else []
        if len(runs) >= expected or time.monotonic() > deadline:
            return runs
        await asyncio.sleep(0.1)


def _answers(runs: list[dict[str, Any]]) -> dict[str, str]:
    return {run["service_name"]: run["output"][0]["content"] for run in runs}


async def test_a_second_service_reusing_a_span_id_in_memory_does_not_take_over_the_run(
    service_config: ServiceConfig,
) -> None:
    """While the trace is assembled (rescore policy), the intruder's copy of the root span is refused."""
    service = Service(_configure(service_config, late_span_policy="rescore"))
    await service.start()
    try:
        await _post(service, _agent_export("travel-bot", "Sunny."))
        assert _answers(await _runs(service, 1)) == {"travel-bot": "Sunny."}
        await _post(service, _agent_export("intruder", "Buy my product."))
        await asyncio.sleep(1.0)  # quiet period and more: a rescore would be stored by now
        assert _answers(await _runs(service, 2, wait_s=0.5)) == {"travel-bot": "Sunny."}
        assert service.metrics()["spans_conflicting_ids_ignored"] == 1
    finally:
        await service.shutdown()


async def test_a_second_service_reusing_a_span_id_later_does_not_replace_the_stored_run(
    service_config: ServiceConfig,
) -> None:
    """After the first trace left memory, the intruder's run is scored as its own: the first one stays stored."""
    _configure(service_config, max_wait_s=0.5, late_span_window_s=0.0)
    first = Service(service_config)
    await first.start()
    try:
        await _post(first, _agent_export("travel-bot", "Sunny."))
        assert _answers(await _runs(first, 1)) == {"travel-bot": "Sunny."}
        # A restart looks back max_wait_s + late_span_window_s from the latest span stored (since session 29, not
        # from the restart): a later trace puts the first one past that, so the next start recovers nothing of it.
        await asyncio.sleep(1.0)
        await _post(first, _agent_export("travel-bot", "Cloudy.", trace_id="f" * 32))
        await asyncio.sleep(1.0)  # stored, and decided
    finally:
        await first.shutdown()
    second = Service(service_config)
    await second.start()
    try:
        await _post(second, _agent_export("intruder", "Buy my product."))
        runs = await _runs(second, 2)
        assert _answers(runs) == {"travel-bot": "Sunny.", "intruder": "Buy my product."}
    finally:
        await second.shutdown()
