"""A scoring overload that lasts: memory stays bounded, and every run still gets exactly one decision (#43).

Seen in a review of the ready line: while scoring is behind the line is full and nothing polls, so traces wait in
run assembly until its bounds evict them, and their runs waited for the next poll in a list no bound counted
(195 runs and 4 MB held past a line of 2 and 5 traces). Past the line's own bounds they are now shed: decided
``too_large``, with the reason, while the line waits.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import agent_traces

TRACES = 200


@pytest.mark.reliability("bounded-memory-backpressure")
async def test_runs_evicted_while_scoring_is_behind_are_shed_once_and_the_rest_scored_once(
    service_config: ServiceConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring behind for good: evicted runs past the ready line are decided too_large once, the rest scored once."""
    gate = tmp_path / "slow"
    gate.write_text("")
    monkeypatch.setenv("SPANSCORE_TEST_SLOW_WHILE", str(gate))  # each job takes 0.5 s while the file exists
    runs = {"quiet_period_s": 0.1, "max_pending_traces": 10}
    service_config.collector.runs = service_config.collector.runs.model_copy(update=runs)
    service_config.scoring.poll_interval_s = 0.05
    service_config.scoring.queue_size = 2  # a ready line of 4 runs
    service_config.scoring.code_processes = 1
    service_config.rules = [
        RuleConfig.model_validate({"name": "r", "scorers": ["tests.e2e.slow_scorer:gated"]}),
        # The draw still holds on a shed run: half of them are sampled_out, as they would have been anyway.
        RuleConfig.model_validate({"name": "half", "sample": 0.5, "scorers": ["tests.e2e.slow_scorer:gated"]}),
    ]
    service = Service(service_config)
    await service.start()
    try:
        live = service.live
        assert live is not None
        spans = agent_traces(TRACES)
        held = 0
        for first in range(0, len(spans), 40):  # 20 traces of two spans per export
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans[first : first + 40]) == (
                "SUCCESS"
            )
            held = max(held, live.assembler.evicted_waiting)
            await asyncio.sleep(0.1)
        deadline = time.monotonic() + 30
        while live.assembler.stats.runs_shed == 0 and time.monotonic() < deadline:
            held = max(held, live.assembler.evicted_waiting)
            await asyncio.sleep(0.05)
        assert live.assembler.stats.runs_shed > 0, "no run was shed while scoring was behind"
        assert held <= 4 + 20, f"{held} evicted runs held past the line's 4 (and one export's eviction)"
        gate.unlink()
        sql = "SELECT uniqExact(RunId) FROM score_decisions FINAL WHERE Rule = 'r'"
        while time.monotonic() < deadline + 30:
            decided = int((await asyncio.to_thread(service.store.internal_query, sql))[0][0])
            if decided >= TRACES:
                break
            await asyncio.sleep(0.2)
        await live.settle()
        scored = (
            "SELECT (SELECT uniqExact(RunId, Rule) FROM scores FINAL)"
            " = (SELECT countIf(Decision = 'sampled') FROM score_decisions FINAL)"
        )
        while not (await asyncio.to_thread(service.store.internal_query, scored))[0][0]:
            assert time.monotonic() < deadline + 60, "the sampled runs were not all scored"
            await asyncio.sleep(0.2)
        shed = live.assembler.stats.runs_shed
        rows = await asyncio.to_thread(
            service.store.internal_query,
            "SELECT d.RunId, d.Decision, d.Reason, countIf(s.RunId != '') FROM score_decisions AS d FINAL"
            " LEFT JOIN (SELECT RunId FROM scores FINAL WHERE Rule = 'r') AS s ON s.RunId = d.RunId"
            " WHERE d.Rule = 'r' GROUP BY d.RunId, d.Decision, d.Reason",
        )
        halves = dict(
            await asyncio.to_thread(
                service.store.internal_query, "SELECT RunId, Decision FROM score_decisions FINAL WHERE Rule = 'half'"
            )
        )
    finally:
        await service.shutdown()
    assert len(rows) == TRACES and len({row[0] for row in rows}) == TRACES  # one decision per run
    too_large = [row for row in rows if row[1] == "too_large"]
    assert len(too_large) == shed and all("scoring was behind" in row[2] and row[3] == 0 for row in too_large)
    sampled = [row for row in rows if row[1] == "sampled"]
    assert len(sampled) + len(too_large) == TRACES and all(row[3] == 1 for row in sampled)  # each scored once
    shed_halves = [halves[row[0]] for row in too_large]
    assert len(halves) == TRACES and set(shed_halves) == {"sampled_out", "too_large"}
