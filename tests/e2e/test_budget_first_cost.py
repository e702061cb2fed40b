"""A burst before a budget knows what a run costs is judged, not refused (#36, the independent check).

A daily budget lets one run in flight until a run has cost something, and a run it refuses is never asked
again: a service that starts (or a fleet replica that joins) into a burst of always-judged runs judged one and
refused the rest ``over_budget``, 19-21 of 28 at load 14 where the judge answers slowly. A real ``Service``,
one process, a fake judge over HTTP that answers after 0.5 s and reports 70 tokens a call.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_fleet import configure, query, until
from tests.e2e.test_live_scoring import agent_traces
from tests.fakes.fake_openai import FakeJudgeServer, Reply
from tests.service_setup import make_service_config, new_database_name

BURST = 8


async def test_a_burst_before_the_first_cost_is_known_waits_for_it_and_is_judged(chdb_dsn: str, tmp_path: Path) -> None:
    judged = {
        "name": "judged",
        "scorers": ["toxicity"],
        "always": {"where": {"gen_ai.agent.name": {"exists": True}}},
        "budget": {"daily_tokens": 100 * 70},
    }
    config = make_service_config(chdb_dsn, new_database_name(), tmp_path)
    configure(config, [judged], 1.0)
    judge = FakeJudgeServer(latency_s=0.5, default_reply=Reply.json({"verdicts": [{"verdict": "no", "reason": "ok"}]}))
    await judge.start()
    config.judge = {"model": "openai/judge", "api_base": judge.base_url, "timeout_s": 5}
    service = Service(config)
    await service.start()
    try:
        assert service.grpc is not None and service.live is not None
        live = service.live
        traces = agent_traces(BURST)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), traces) == "SUCCESS"

        async def all_decided_and_ended() -> bool:
            rows = await query(service, "SELECT count() FROM score_decisions WHERE Rule = 'judged'")
            return int(rows[0][0]) >= BURST and live.dispatcher.runs_in_flight == 0

        await until(all_decided_and_ended, timeout_s=30)
        outcomes = dict(await query(service, "SELECT Decision, count() FROM score_decisions GROUP BY Decision"))
        assert outcomes == {"sampled": BURST}, outcomes
        assert len(judge.requests) == BURST
        assert live.dispatcher.first_cost.waits >= 1
    finally:
        await service.shutdown()
        await judge.stop()
