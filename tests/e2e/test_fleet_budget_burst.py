"""A burst of judged runs finds the fleet's budget, not only this replica's slices (#36, the independent check).

Observed: 4-8 judged runs per scenario refused ``over_budget`` with 27-31 of 45 calls spent. A replica leases
slices of the day's limit in fleet rounds every half second, and a burst that arrives between two rounds used
up what it held; a run refused over budget is not asked again. Now a burst leases what it needs before it is
decided. A real ``Service`` in a fleet (real ZooKeeper), a fake judge over HTTP that reports 70 tokens a call.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from spanscore.fleet.config import FleetConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_fleet import configure, query, until
from tests.e2e.test_live_scoring import agent_traces
from tests.fakes.fake_openai import FakeJudgeServer, Reply
from tests.service_setup import make_service_config, new_database_name
from tests.zookeeper import ZooKeeperServer

TOKENS_PER_CALL = 70
LIMIT_CALLS = 30
"""The day's limit in calls; a slice is 1/(2 x expected_replicas) of it: 5 calls."""
BURST = 15


async def test_a_burst_of_judged_runs_leases_what_it_needs_before_it_is_decided(
    chdb_dsn: str, tmp_path: Path, zookeeper: ZooKeeperServer
) -> None:
    judged = {
        "name": "judged",
        "scorers": ["toxicity"],
        "always": {"where": {"gen_ai.agent.name": {"exists": True}}},  # every run: each should be judged
        "budget": {"daily_tokens": LIMIT_CALLS * TOKENS_PER_CALL},
    }
    config = make_service_config(chdb_dsn, new_database_name(), tmp_path)
    configure(config, [judged], 1.0)
    config.fleet = FleetConfig(keeper=zookeeper.chroot(), replica="burst", session_timeout_s=4.0, expected_replicas=3)
    judge = FakeJudgeServer(default_reply=Reply.json({"verdicts": [{"verdict": "no", "reason": "polite"}]}))
    await judge.start()
    config.judge = {"model": "openai/judge", "api_base": judge.base_url, "timeout_s": 5}
    service = Service(config)
    await service.start()
    try:
        assert service.fleet is not None and service.grpc is not None
        assert await asyncio.to_thread(service.fleet.fleet.wait_joined, 20)

        async def leased() -> bool:
            return service.metrics().get("fleet_budget_leases_taken", 0) >= 1

        await until(leased, timeout_s=20)
        port = service.grpc.port
        sent = 0
        for count in (1, BURST):  # one first: until a run's cost is known, a budget lets one run in flight
            await send(service, port, count, first=sent)
            sent += count
        outcomes = dict(await query(service, "SELECT Decision, count() FROM score_decisions GROUP BY Decision"))
        assert outcomes == {"sampled": 1 + BURST}, outcomes  # none refused: the fleet had budget for all
        assert len(judge.requests) == 1 + BURST
        assert service.metrics()["fleet_budget_burst_leases"] >= 1
        await send(service, port, 20, first=sent)  # more than the day has left: the limit still holds
        outcomes = dict(await query(service, "SELECT Decision, count() FROM score_decisions GROUP BY Decision"))
        assert len(judge.requests) == outcomes["sampled"] <= LIMIT_CALLS, outcomes
        assert outcomes["over_budget"] >= 1 + BURST + 20 - LIMIT_CALLS, outcomes
    finally:
        await service.shutdown()
        await judge.stop()


async def send(service: Service, port: int, count: int, *, first: int) -> None:
    """Send ``count`` runs and wait until each is decided and its judge calls have ended."""
    assert await asyncio.to_thread(export, grpc_exporter(port), agent_traces(count)) == "SUCCESS"

    async def decided() -> bool:
        rows = await query(service, "SELECT count() FROM score_decisions WHERE Rule = 'judged'")
        live = service.live
        return int(rows[0][0]) >= first + count and live is not None and live.dispatcher.runs_in_flight == 0

    await until(decided, timeout_s=30)
