"""Runs and sessions are held in memory bounded in bytes, not only in counts, through the real service.

Observed: a session of 40 runs with 1.8 MB of text each added 305-347 MB, all of it held, because the
bounds counted spans, traces, sessions and turns. Here the byte caps are set small; a session of large
turns keeps only its newest turns within its byte cap, a trace over the per-run cap is cut with the
decision ``too_large``, and the metrics show the bytes held.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from spanscore.config import ServiceConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_targets import _fast, _session_config, _wait_for, rag_traces

SESSION_CAP = 1 << 20
RUN_CAP = 256 << 10
TURN_TEXT = 300_000  # characters of answer per turn: eight turns hold 2.4 MB, over the session cap
TURNS = 8


def big_turns(session: str, count: int, size: int, first: int = 0) -> list[ReadableSpan]:
    """Runs of a session whose root carries an answer of ``size`` characters."""
    spans = rag_traces(count, session=session, first=first)
    answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "y " * (size // 2)}]}])
    for span in spans:
        if span.name == "invoke_agent helper":
            span._attributes = {
                **dict(span.attributes or {}),
                "gen_ai.output.messages": answer,
            }  # the SDK's finished span has no setter
    return spans


async def test_a_session_of_large_turns_is_held_within_its_byte_cap(service_config: ServiceConfig) -> None:
    _session_config(service_config, 1.0)
    service_config.collector.sessions = service_config.collector.sessions.model_copy(
        update={"max_session_bytes": SESSION_CAP}
    )
    service = Service(service_config)
    await service.start()
    try:
        spans = big_turns("conv-big", TURNS, TURN_TEXT)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        sql = "SELECT count() FROM scores FINAL WHERE Target = 'session' AND Scorer = 'turn_count'"
        assert await _wait_for(service, sql, 1) == 1
        metrics = service.live.metrics()
        assert 0 < metrics["sessions_bytes_held"] <= SESSION_CAP
        assert metrics["sessions_turns_dropped"] >= 1
        rows = await asyncio.to_thread(
            service.store.internal_query, "SELECT Score FROM scores FINAL WHERE Scorer = 'turn_count'"
        )
        assert 1 <= rows[0][0] <= SESSION_CAP // TURN_TEXT  # the newest turns that fit, not all eight
    finally:
        await service.shutdown()


async def test_a_trace_over_the_run_cap_is_cut_with_the_decision_too_large(service_config: ServiceConfig) -> None:
    _session_config(service_config, 1.0)
    service_config.collector.runs = service_config.collector.runs.model_copy(update={"max_run_bytes": RUN_CAP})
    service = Service(service_config)
    await service.start()
    try:
        spans = big_turns("conv-huge", 1, TURN_TEXT)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        metrics = service.live.metrics()
        deadline = asyncio.get_running_loop().time() + 30
        while metrics.get("runs_too_large", 0) < 1 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.1)
            metrics = service.live.metrics()
        assert metrics["runs_too_large"] == 1
        assert metrics["runs_too_large_records_dropped"] >= 1
        assert metrics["runs_pending_bytes"] <= RUN_CAP
    finally:
        await service.shutdown()


RUN_RULE = {"name": "answers", "scorers": ["completeness"]}
SKIPPED_RULE = {"name": "elsewhere", "where": {"service.name": "another-service"}, "scorers": ["completeness"]}


async def _decisions(service: Service, trace_ids: set[str]) -> list[tuple[str, str, str, str]]:
    rows = await asyncio.to_thread(
        service.store.internal_query,
        "SELECT TraceId, Rule, Decision, Reason FROM score_decisions FINAL WHERE Target = 'run' ORDER BY Rule",
    )
    return [tuple(row) for row in rows if row[0] in trace_ids]  # type: ignore[misc]


async def _wait_decisions(service: Service, trace_ids: set[str], count: int) -> list[tuple[str, str, str, str]]:
    deadline = asyncio.get_running_loop().time() + 30
    rows = await _decisions(service, trace_ids)
    while len(rows) < count and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.1)
        rows = await _decisions(service, trace_ids)
    return rows


async def test_a_cut_run_gets_the_decision_too_large_per_rule_and_is_not_scored(service_config: ServiceConfig) -> None:
    """Observed: a cut run was only logged and counted, and scored on what was kept, which is its start
    without the answer (the root ends last and is the span dropped). Each rule whose population holds it now
    records ``too_large`` with the reason, so coverage has its denominator and no judge sees half a run."""
    _fast(service_config, [RUN_RULE, SKIPPED_RULE])
    service_config.collector.runs = service_config.collector.runs.model_copy(update={"max_run_bytes": RUN_CAP})
    service = Service(service_config)
    await service.start()
    try:
        spans = big_turns("conv-cut", 1, TURN_TEXT)
        trace_ids = {format(span.context.trace_id, "032x") for span in spans}
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        rows = await _wait_decisions(service, trace_ids, 2)
        assert [(rule, decision) for _, rule, decision, _ in rows] == [
            ("answers", "too_large"),
            ("elsewhere", "filtered_out"),
        ]
        assert "max_run_bytes" in rows[0][3]
        scores = await asyncio.to_thread(service.store.internal_query, "SELECT count() FROM scores")
        assert scores == [(0,)]
    finally:
        await service.shutdown()


@pytest.mark.parametrize("root_arrived", [True, False], ids=["whole", "rootless"])
async def test_a_trace_evicted_for_size_is_decided_whole_or_too_large(
    service_config: ServiceConfig, root_arrived: bool
) -> None:
    """A trace evicted because the pending traces held more than max_pending_bytes vanished from coverage:
    no decision at all. Then every such run was decided ``too_large``, also a whole one (38,000 small spans/s
    with a selecting rule: 67% of runs). Now a run whose root had arrived is decided as usual, before its quiet
    period ended (ReadyReason ``evicted``); one whose root had not is ``too_large`` with the bound named."""
    _fast(service_config, [RUN_RULE])
    service_config.collector.runs = service_config.collector.runs.model_copy(
        update={"max_pending_bytes": RUN_CAP, "quiet_period_s": 30.0, "max_wait_s": 60.0}
    )
    service = Service(service_config)
    await service.start()
    try:
        first = big_turns("conv-a", 1, TURN_TEXT // 2)
        if not root_arrived:
            first = [span for span in first if span.parent is not None]
        second = big_turns("conv-b", 1, TURN_TEXT, first=5)  # over the bound: the first trace must go
        evicted = {format(span.context.trace_id, "032x") for span in first}
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), first) == "SUCCESS"
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), second) == "SUCCESS"
        rows = await _wait_decisions(service, evicted, 1)  # long before the 30 s quiet period ends
        assert len(rows) == 1 and rows[0][1] == "answers"
        (reason,) = await asyncio.to_thread(
            service.store.internal_query,
            "SELECT ReadyReason FROM score_decisions FINAL WHERE TraceId = {t:String}",
            {"t": rows[0][0]},
        )
        assert reason == ("evicted",)
        if root_arrived:
            assert rows[0][2] != "too_large"
            assert service.live.metrics()["runs_evicted_early"] >= 1
        else:
            assert rows[0][2] == "too_large" and "max_pending_bytes" in rows[0][3]
    finally:
        await service.shutdown()
