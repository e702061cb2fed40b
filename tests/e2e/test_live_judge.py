"""An LLM judge scorer on live traffic: the fake judge over real HTTP, judge calls traced and never scored."""

from __future__ import annotations

import asyncio
import time

from spanscore.config import ServiceConfig
from spanscore.export.forward import ForwardConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import agent_traces
from tests.fakes.fake_openai import FakeJudgeServer, Reply
from tests.service_setup import new_database_name


async def _rows(service: Service, sql: str, expected: int, wait_s: float = 30.0) -> list[tuple]:  # type: ignore[type-arg]
    deadline = time.monotonic() + wait_s
    while True:
        rows = await asyncio.to_thread(service.store.internal_query, sql)
        if len(rows) >= expected or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(0.2)


async def test_llm_scorer_live_with_traced_judge_calls(service_config: ServiceConfig) -> None:
    backend_config = service_config.model_copy(deep=True)
    backend_config.storage.database = new_database_name()
    backend_config.storage.spool_dir = f"{service_config.storage.spool_dir}-backend"  # one writer per spool
    # The backend is a spanscore too, scoring everything it receives except spanscore's own spans.
    backend_config.collector.runs = backend_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    backend_config.scoring.poll_interval_s = 0.05
    backend_config.rules = [RuleConfig.model_validate({"name": "everything", "scorers": ["completeness"]})]
    backend = Service(backend_config)
    await backend.start()
    async with FakeJudgeServer() as judge:
        verdict = {"verdicts": [{"verdict": "no", "reason": "a polite factual answer"}]}
        judge.script("judge", Reply.json(verdict), Reply.json(verdict))
        service_config.judge = {"model": "openai/judge", "api_base": judge.base_url, "timeout_s": 5}
        service_config.forward = ForwardConfig(
            endpoint=f"http://127.0.0.1:{backend.http.port}", scores="none", judge_spans=True
        )
        service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
        service_config.scoring.poll_interval_s = 0.05
        service_config.rules = [RuleConfig.model_validate({"name": "safety", "scorers": ["toxicity"]})]
        service = Service(service_config)
        await service.start()
        try:
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), agent_traces(2)) == "SUCCESS"
            rows = await _rows(service, "SELECT Score, Status, JudgeModel, HigherIsBetter FROM scores FINAL", 2)
            assert rows == [(0.0, "ok", "openai/judge", False)] * 2
        finally:
            await service.shutdown()
    try:
        judge_spans = await _rows(
            backend,
            "SELECT SpanAttributes['spanscore.judge'] FROM otel_traces WHERE SpanAttributes['spanscore.judge'] != ''",
            2,
        )
        assert [row[0] for row in judge_spans] == ["true", "true"]
        for _ in range(100):  # up to 10 s for the backend to see the judge runs become ready
            if backend.live is None or backend.live.internal_runs_skipped >= 2:
                break
            await asyncio.sleep(0.1)
        assert backend.live is not None and backend.live.internal_runs_skipped == 2
        decided = await asyncio.to_thread(backend.store.internal_query, "SELECT count() FROM score_decisions")
        assert decided[0][0] == 0  # judge calls are stored, never scored
    finally:
        await backend.shutdown()
