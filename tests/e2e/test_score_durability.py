"""Scores and decisions survive a storage outage and a kill -9 while they wait in the spool: none lost, none twice."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spanscore.config import ServiceConfig
from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import agent_traces

RUNS = 3
ROOT = Path(__file__).resolve().parents[2]


async def _count(service: Service, sql: str, expected: int, wait_s: float = 30.0) -> int:
    deadline = time.monotonic() + wait_s
    while True:
        count = int((await asyncio.to_thread(service.store.internal_query, sql))[0][0])
        if count >= expected or time.monotonic() > deadline:
            return count
        await asyncio.sleep(0.1)


async def _scores_once(service: Service) -> tuple[int, int, int]:
    """Rows in ``scores`` with FINAL, without it, and distinct ids: all equal when nothing was written twice."""
    await _count(service, "SELECT count() FROM scores FINAL", RUNS)
    rows = await asyncio.to_thread(
        service.store.internal_query,
        "SELECT (SELECT count() FROM scores FINAL), count(), uniqExact(ScoreId) FROM scores",
    )
    final, raw, distinct = rows[0]
    return int(final), int(raw), int(distinct)


def _with_rules(config: ServiceConfig) -> ServiceConfig:
    config.collector.runs = config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    config.scoring.poll_interval_s = 0.05
    config.rules = [RuleConfig.model_validate({"name": "r", "scorers": ["completeness"]})]
    return config


@pytest.mark.reliability("no-score-lost")
async def test_scores_and_decisions_wait_out_a_storage_outage(service_config: ServiceConfig) -> None:
    service = Service(_with_rules(service_config))
    assert service.live is not None
    writers = (service.live.score_writer, service.live.decision_writer)
    real = [writer.inserter.inserts.rows for writer in writers]
    down = {"on": True}

    def failing(insert):  # type: ignore[no-untyped-def]
        async def insert_or_fail(rows):  # type: ignore[no-untyped-def]
            if down["on"]:
                raise RetryableError("storage unavailable (injected)")
            await insert.consume(rows)

        return Calling(insert_or_fail)

    for writer, insert in zip(writers, real, strict=True):
        writer.inserter.inserts.rows = failing(insert)
    await service.start()
    try:
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), agent_traces(RUNS)) == "SUCCESS"
        for _ in range(600):  # at most 30 s
            if service.metrics()["scores_spooled"] >= RUNS:
                break
            await asyncio.sleep(0.05)
        assert service.metrics()["scores_spooled"] == RUNS
        assert service.metrics()["decisions_spooled"] >= RUNS
        assert await _count(service, "SELECT count() FROM scores", 1, wait_s=0.3) == 0  # the outage holds
        down["on"] = False
        assert await _scores_once(service) == (RUNS, RUNS, RUNS)
        assert await _count(service, "SELECT count() FROM score_decisions FINAL", RUNS) == RUNS
    finally:
        await service.shutdown()


@pytest.mark.reliability("no-score-lost")
async def test_scores_spooled_at_a_kill_9_are_stored_by_the_next_process(service_config: ServiceConfig) -> None:
    settings = {
        "dsn": service_config.storage.dsn,
        "database": service_config.storage.database,
        "spool_dir": service_config.storage.spool_dir,
        "runs": RUNS,
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.e2e.score_outage_child", json.dumps(settings), stdout=subprocess.PIPE, cwd=ROOT
    )
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 90)
        assert line.decode().strip() == f"spooled {RUNS}"
    finally:
        child.kill()  # SIGKILL: no drain, no flush
        await asyncio.wait_for(child.wait(), 30)
    config = _with_rules(service_config)
    config.scoring.recover_on_start = False  # only the spool may bring the scores back
    service = Service(config)
    await service.start()
    try:
        assert await _scores_once(service) == (RUNS, RUNS, RUNS)
        assert await _count(service, "SELECT count() FROM score_decisions FINAL", RUNS) == RUNS
    finally:
        await service.shutdown()
