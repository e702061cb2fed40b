"""Backfill progress moves while runs are scored (#40 item 3: it sat at ``3/8 runs 0 runs/s ETA 0s`` for 30 s).

A real store holds 8 runs, 3 of them already scored by the rule; the backfill scores the other 5 through a
slow judge (the fake OpenAI-compatible server, over real HTTP via litellm), one at a time. All 8 fit in one
chunk of the backfill, which is where the figures used to stay put until the chunk ended.
"""

from __future__ import annotations

import asyncio

from spanscore.config import ServiceConfig
from spanscore.offline.backfill import BackfillProgress, backfill
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.judge.config import JudgeConfig
from spanscore.scorers.judge.current import Judge
from spanscore.scoring.config import ScoringConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import agent_traces
from tests.fakes.fake_openai import FakeJudgeServer, Reply

VERDICT = {"verdicts": [{"verdict": "no", "reason": "a polite factual answer"}]}
RULE = RuleConfig.model_validate({"name": "later", "scorers": ["toxicity"]})


async def test_progress_moves_run_by_run_inside_a_chunk(service: Service, service_config: ServiceConfig) -> None:
    assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), agent_traces(8)) == "SUCCESS"
    runs = service_config.collector.runs
    async with FakeJudgeServer() as judge_server:
        judge = Judge(JudgeConfig(model="openai/judge", api_base=judge_server.base_url, worker_processes=0))
        judge_server.script("judge", *[Reply.json(VERDICT)] * 3)
        first = await backfill(service.store, RULE.model_copy(update={"max_per_minute": 3}), 3600, runs, judge=judge)
        already = first["scores_written"]
        assert already == 3, first
        judge_server.script("judge", *[Reply.json(VERDICT, delay_s=0.4)] * 8)
        progress = BackfillProgress(RULE.name)
        seen: list[dict[str, object]] = []

        async def watch() -> None:
            while not progress.finished:
                seen.append(progress.as_dict())
                await asyncio.sleep(0.05)

        watcher = asyncio.create_task(watch())
        one_at_a_time = ScoringConfig(workers=1)
        answer = await backfill(service.store, RULE, 3600, runs, one_at_a_time, progress, judge)
        await watcher
        await judge.aclose()
    assert answer["scores_written"] == 8 - already, answer
    between = [s for s in seen if already < int(str(s["done"])) < 8]
    assert between, seen  # the count moved inside the chunk, not only at its end
    assert {s["done"] for s in between} and len({s["done"] for s in between}) >= 2, between
    assert all(float(str(s["rate_runs_per_s"])) > 0 and float(str(s["eta_s"])) > 0 for s in between), between
