"""What a restart finds undecided in storage is decided: past half the run assembler's bounds, and after downtime.

A crash under load left seconds of stored traffic that run assembly had not handed on yet. The restart read the
latest traces back until it held half of its bounds and stopped there: an independent check counted 4,700
acknowledged traces with no decision at all afterwards (#43). And the look-back ended at the restart, so a
process back after a longer downtime than the look-back (6 minutes) found nothing of what the crash left.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter


def _agent_traces(count: int, age_s: float = 0.0) -> list[ReadableSpan]:
    """``count`` agent runs of two spans each, started ``age_s`` ago."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    start = time.time_ns() - int(age_s * 1e9)
    for index in range(count):
        root = tracer.start_span("invoke_agent triage", start_time=start + index * 1_000)
        root.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "triage",
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": f"q{index}"}]}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "a"}]}]
                ),
            }
        )
        with trace.use_span(root, end_on_exit=False):
            tracer.start_span("execute_tool search", start_time=start + index * 1_000 + 10).end(
                end_time=start + index * 1_000 + 20
            )
        root.end(end_time=start + index * 1_000 + 30)
    provider.shutdown()
    return list(memory.get_finished_spans())


async def _stored_undecided(config: ServiceConfig, spans: list[ReadableSpan]) -> None:
    """Spans acknowledged and stored by a process with no rules: nothing decided them (as after a crash)."""
    service = Service(config.model_copy(update={"rules": []}))
    await service.start()
    try:
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
    finally:
        await service.shutdown()


async def _decisions(service: Service, expected: int, wait_s: float = 60.0) -> list[tuple[str, str, int]]:
    sql = "SELECT Decision, ReadyReason, uniqExact(TraceId) FROM score_decisions FINAL GROUP BY 1, 2 ORDER BY 1, 2"
    deadline = time.monotonic() + wait_s
    while True:
        rows = await asyncio.to_thread(service.store.internal_query, sql)
        if sum(row[2] for row in rows) >= expected or time.monotonic() > deadline:
            return [(row[0], row[1], int(row[2])) for row in rows]
        await asyncio.sleep(0.2)


def _scoring(config: ServiceConfig, **runs: object) -> ServiceConfig:
    config.collector.runs = config.collector.runs.model_copy(update={"quiet_period_s": 0.2, **runs})
    config.scoring.poll_interval_s = 0.05
    config.rules = [RuleConfig.model_validate({"name": "r", "scorers": ["completeness"]})]
    return config


@pytest.mark.reliability("no-score-lost")
async def test_a_restart_decides_every_undecided_trace_past_half_its_bounds_without_evicting(
    service_config: ServiceConfig,
) -> None:
    config = _scoring(service_config, max_pending_traces=40)  # half of it: 20 traces; 120 are left undecided
    await _stored_undecided(config, _agent_traces(120))
    service = Service(config)
    await service.start()
    try:
        # Each of the 120 decided after its quiet period: none evicted early, none cut as too large.
        assert await _decisions(service, 120) == [("sampled", "quiet_period", 120)]
        metrics = service.live.metrics()  # type: ignore[union-attr]
        # Traces were evicted at the bound only once settled (their runs handed on): none early, none too large.
        assert metrics["runs_evicted_early"] == 0 and metrics["runs_too_large"] == 0
        assert metrics["runs_recovered_traces"] == 120
        assert metrics["runs_recovery_waiting_traces"] == 0
    finally:
        await service.shutdown()


@pytest.mark.reliability("no-score-lost")
async def test_a_restart_after_a_downtime_longer_than_the_look_back_decides_what_the_crash_left(
    service_config: ServiceConfig,
) -> None:
    config = _scoring(service_config)
    await _stored_undecided(config, _agent_traces(3, age_s=600))  # the look-back is 60 + 300 s
    service = Service(config)
    await service.start()
    try:
        assert await _decisions(service, 3) == [("sampled", "quiet_period", 3)]
    finally:
        await service.shutdown()
