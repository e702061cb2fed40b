"""The live loop end to end: SDK spans in, code-scorer scores out, as rows and as span events."""

from __future__ import annotations

import asyncio
import json
import time

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def agent_traces(count: int, sampler: Sampler | None = None) -> list:  # type: ignore[type-arg]
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}), sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    for index in range(count):
        with tracer.start_as_current_span("invoke_agent triage") as root:
            root.set_attributes(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "triage",
                    "gen_ai.input.messages": _messages("user", f"What is the capital of France? ({index})"),
                    "gen_ai.output.messages": _messages("assistant", "The capital of France is Paris."),
                }
            )
            with tracer.start_as_current_span("execute_tool search") as tool:
                tool.set_attributes(
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "search",
                        "gen_ai.tool.call.arguments": json.dumps({"q": "capital of France"}),
                        "gen_ai.tool.call.result": "Paris",
                    }
                )
    provider.shutdown()
    return list(memory.get_finished_spans())


async def _wait_for(service: Service, sql: str, expected: int, wait_s: float = 30.0) -> int:
    deadline = time.monotonic() + wait_s
    while True:
        count = int((await asyncio.to_thread(service.store.internal_query, sql))[0][0])
        if count >= expected or time.monotonic() > deadline:
            return count
        await asyncio.sleep(0.2)


async def test_scores_arrive_as_rows_and_events(service_config: ServiceConfig) -> None:
    service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.3})
    service_config.scoring.poll_interval_s = 0.05
    service_config.rules = [
        RuleConfig.model_validate(
            {
                "name": "cheap-checks",
                "where": {"service.name": "support-bot"},
                "sample": 1.0,
                "scorers": ["completeness", {"name": "tool_call_accuracy", "expected_tool": "search"}],
            }
        ),
        RuleConfig.model_validate(
            {"name": "other-service", "where": {"service.name": "someone-else"}, "scorers": ["completeness"]}
        ),
    ]
    service = Service(service_config)
    await service.start()
    try:
        spans = agent_traces(3)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        found = await _wait_for(service, "SELECT count() FROM scores FINAL WHERE Status = 'ok'", 6)
        assert found == 6
        rows = await asyncio.to_thread(
            service.store.internal_query,
            "SELECT Scorer, Score, SampleRate, TraceId, SpanId, ServiceName, AgentName, Label FROM scores FINAL",
        )
        roots = {
            (f"{s.get_span_context().trace_id:032x}", f"{s.get_span_context().span_id:016x}")
            for s in spans
            if s.name.startswith("invoke_agent")
        }
        assert {(r[3], r[4]) for r in rows} == roots
        tool_scores = [r[1] for r in rows if r[0] == "tool_call_accuracy"]
        assert tool_scores == [1.0, 1.0, 1.0]
        assert all(r[2] == 1.0 and r[5] == "support-bot" and r[6] == "triage" for r in rows)

        decisions = await asyncio.to_thread(
            service.store.internal_query,
            "SELECT Rule, Decision, count() FROM score_decisions FINAL GROUP BY Rule, Decision ORDER BY Rule",
        )
        assert decisions == [("cheap-checks", "sampled", 3), ("other-service", "filtered_out", 3)]

        events = await asyncio.to_thread(
            service.store.internal_query,
            "SELECT SpanId, Attributes['gen_ai.evaluation.name'], Attributes['gen_ai.evaluation.score.value']"
            " FROM span_events WHERE EventName = 'gen_ai.evaluation.result'",
        )
        assert len(events) == 6
        assert {e[0] for e in events} == {span_id for _, span_id in roots}
        assert {e[1] for e in events} == {"completeness", "tool_call_accuracy"}
    finally:
        await service.shutdown()


async def test_replaying_the_same_traces_never_duplicates_scores(service_config: ServiceConfig) -> None:
    service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    service_config.scoring.poll_interval_s = 0.05
    service_config.rules = [RuleConfig.model_validate({"name": "r", "scorers": ["completeness"]})]
    spans = agent_traces(2)
    for _ in range(2):  # the second service instance replays the same traces into the same database
        service = Service(service_config)
        await service.start()
        try:
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
            assert await _wait_for(service, "SELECT count() FROM scores", 2) >= 2
        finally:
            await service.shutdown()
    service = Service(service_config)
    await service.start()
    try:
        distinct = await asyncio.to_thread(service.store.internal_query, "SELECT count() FROM scores FINAL")
        assert distinct[0][0] == 2
        stored = await asyncio.to_thread(service.store.internal_query, "SELECT count() FROM scored_runs")
        views = await asyncio.to_thread(service.store.internal_query, "SELECT count() FROM scored_runs FINAL")
        assert stored[0][0] >= 2 and views[0][0] == 2  # what was scored: one row per run, however often replayed
    finally:
        await service.shutdown()


async def test_runs_pending_at_shutdown_are_scored_after_restart(service_config: ServiceConfig) -> None:
    service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.5})
    service_config.scoring.poll_interval_s = 0.05
    service_config.rules = [RuleConfig.model_validate({"name": "r", "scorers": ["completeness"]})]
    first = Service(service_config)
    await first.start()
    try:
        assert await asyncio.to_thread(export, grpc_exporter(first.grpc.port), agent_traces(2)) == "SUCCESS"
        # well inside the quiet period: nothing is ready yet when the service stops
        assert int((await asyncio.to_thread(first.store.internal_query, "SELECT count() FROM scores"))[0][0]) == 0
    finally:
        await first.shutdown()

    second = Service(service_config)
    await second.start()
    try:
        assert await _wait_for(second, "SELECT count() FROM scores FINAL", 2) == 2
        # Recovered runs are explained like live ones: what the scorers received is stored for each.
        assert await _wait_for(second, "SELECT count() FROM scored_runs FINAL", 2) == 2
    finally:
        await second.shutdown()


async def test_a_job_cut_mid_scoring_is_scored_once_after_restart(service_config: ServiceConfig) -> None:
    service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    service_config.scoring.poll_interval_s = 0.05
    service_config.scoring.drain_timeout_s = 0.0  # stop like a crash: running jobs are cut, not finished
    service_config.rules = [RuleConfig.model_validate({"name": "r", "scorers": ["tests.e2e.slow_scorer:slow"]})]
    first = Service(service_config)
    await first.start()
    try:
        assert await asyncio.to_thread(export, grpc_exporter(first.grpc.port), agent_traces(1)) == "SUCCESS"
        assert await _wait_for(first, "SELECT count() FROM score_decisions WHERE Decision = 'sampled'", 1) == 1
    finally:
        await first.shutdown()
    await asyncio.to_thread(first.store.open)
    try:
        leftover = await asyncio.to_thread(first.store.internal_query, "SELECT count() FROM scores")
    finally:
        await asyncio.to_thread(first.store.close)
    assert leftover[0][0] == 0  # the job was cut before its score was written

    second = Service(service_config)
    await second.start()
    try:
        assert await _wait_for(second, "SELECT count() FROM scores FINAL", 1) == 1
        await asyncio.sleep(0.5)
        rows = await asyncio.to_thread(second.store.internal_query, "SELECT count(), any(Score) FROM scores")
        assert rows[0] == (1, 0.5)  # scored exactly once, by the restarted service
    finally:
        await second.shutdown()
