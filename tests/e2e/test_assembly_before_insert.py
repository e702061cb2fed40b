"""Behind a spooled acknowledgement, run assembly takes spans when they are acknowledged, not once inserted (#43).

Observed: under the default ``acknowledge: spooled`` spans reached run assembly only after the replay's next
insert, so a run's quiet period began up to ``insert_interval_s`` plus an insert after its spans were
acknowledged, and its score came about 0.4 s later than under ``acknowledge: stored`` (3.26 s at p95 at 32,000
spans/s, over the quiet period + 1 s). Timings are measured by ``bench.scoring_latency``, not asserted here;
this checks the order of things with the span inserts held: the assembler has the spans before they are stored,
decides nothing from them until they are, and then scores each run once.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from spanscore.storage.clickhouse import ClickHouseStore
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import _wait_for, agent_traces

QUIET_S = 0.3


async def test_spans_are_assembled_when_acknowledged_and_scored_once_stored(
    service_config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = asyncio.Event()
    real_insert = ClickHouseStore.insert_span_json

    async def held_insert(self: ClickHouseStore, body: bytes) -> None:
        await gate.wait()
        await real_insert(self, body)

    monkeypatch.setattr(ClickHouseStore, "insert_span_json", held_insert)
    service_config.storage.acknowledge = "spooled"
    service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": QUIET_S})
    service_config.scoring.poll_interval_s = 0.05
    service_config.rules = [RuleConfig.model_validate({"name": "r", "sample": 1.0, "scorers": ["completeness"]})]
    service = Service(service_config)
    await service.start()
    try:
        assert service.grpc is not None and service.live is not None
        spans = agent_traces(3)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        live = service.live
        deadline = time.monotonic() + 10
        for _ in range(500):  # until the assembler holds them, at most 10 s
            if live.assembler.stats.pending_spans >= len(spans) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        assert live.assembler.stats.pending_spans == len(spans), "acknowledged spans did not reach run assembly"
        assert service.span_writer.stats.stored == 0  # none inserted yet
        await asyncio.sleep(QUIET_S * 5)  # many polls past the quiet period
        assert live.assembler.stats.runs_ready == 0, "a run was handed on before its spans were stored"
        assert await _wait_for(service, "SELECT count() FROM score_decisions", 1, wait_s=0.1) == 0
        gate.set()
        assert await _wait_for(service, "SELECT count() FROM scores FINAL WHERE Status = 'ok'", 3) == 3
        assert live.assembler.stats.runs_ready == 3
        assert live.assembler.stats.late_spans_ignored == 0  # the stored spans were not handed on a second time
        assert live.spans_in.early_batches >= 1 and live.spans_in.declined_batches == 0
    finally:
        gate.set()
        await service.shutdown()
