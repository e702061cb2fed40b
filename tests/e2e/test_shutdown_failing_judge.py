"""SIGTERM while the judge fails: the drain cuts the jobs and the whole shutdown ends inside its budget."""

from __future__ import annotations

import asyncio

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import agent_traces
from tests.fakes.fake_openai import FakeJudgeServer, Reply


async def test_shutdown_with_a_failing_judge_finishes_within_shutdown_timeout(service_config: ServiceConfig) -> None:
    async with FakeJudgeServer() as judge:
        judge.fail_for(3600, Reply.error(500, delay_s=0.5))
        service_config.judge = {"model": "openai/judge", "api_base": judge.base_url, "timeout_s": 5, "retries": 10}
        service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
        service_config.scoring.poll_interval_s = 0.05
        service_config.scoring.drain_timeout_s = 1.0
        service_config.shutdown_timeout_s = 8.0
        service_config.rules = [RuleConfig.model_validate({"name": "safety", "scorers": ["toxicity"]})]
        service = Service(service_config)
        await service.start()
        try:
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), agent_traces(2)) == "SUCCESS"
            for _ in range(200):  # up to 10 s for the first judge call to be under way
                if judge.answers or judge.in_flight:
                    break
                await asyncio.sleep(0.05)
            assert judge.answers or judge.in_flight
        finally:
            await asyncio.wait_for(service.shutdown(), service_config.shutdown_timeout_s)
        assert service.span_writer.stats.stored > 0
