"""The judge client through worker processes: same answers, same failure handling, workers replaced when they die."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from spanscore.scorers.judge import workers as judge_workers
from spanscore.scorers.judge.client import JudgeClient, JudgeConfig, JudgeUnavailableError
from spanscore.scorers.judge.transport import InProcessTransport
from spanscore.scorers.judge.transport import Reply as CallReply
from spanscore.scorers.judge.workers import AutoTransport, WorkerPoolTransport, transport_for
from tests.fakes.fake_openai import ModelProfile, Reply


class Verdict(BaseModel):
    verdict: str
    reason: str


GOOD = {"verdict": "yes", "reason": "ok"}


async def test_worker_pool_round_trip_failures_and_replacement(judge_server, judge_config):
    delays: list[float] = []

    async def record(delay: float) -> None:
        delays.append(delay)

    transport = WorkerPoolTransport(processes=1)
    client = JudgeClient(environ={}, sleep=record, transport=transport)
    config = judge_config.with_overrides({"timeout_s": 60})
    try:
        await transport.start()

        judge_server.script("judge", Reply.json(GOOD))
        answer = await client.ask(config, instructions="J", prompt="p", schema=Verdict)
        assert answer.value.verdict == "yes" and answer.spend.input_tokens == 50

        judge_server.script("judge", Reply.error(429, retry_after="3"), Reply.json(GOOD))
        await client.ask(config, instructions="J", prompt="p", schema=Verdict)
        assert delays and delays[-1] >= 3

        judge_server.profiles["plain"] = ModelProfile(json_schema=False)
        judge_server.script("plain", Reply.json(GOOD))
        answer = await client.ask(config.with_overrides("openai/plain"), instructions="J", prompt="p", schema=Verdict)
        assert answer.mode == "json_mode"

        judge_server.script("judge", *[Reply.error(500)] * 4)
        with pytest.raises(JudgeUnavailableError):
            await client.ask(config, instructions="J", prompt="p", schema=Verdict)

        dead = transport._workers[0].process
        dead.kill()
        await dead.wait()
        judge_server.script("judge", Reply.json(GOOD))
        answer = await client.ask(config, instructions="J", prompt="p", schema=Verdict)
        assert answer.value.verdict == "yes"
        assert transport._workers[0].process is not dead
    finally:
        await client.aclose()
        await client.aclose()  # idempotent
    assert transport._workers == []


def test_pool_size_is_checked():
    with pytest.raises(ValueError, match="at least 1"):
        WorkerPoolTransport(processes=0)


class Counting:
    """Stands in for this process's litellm call and counts what reaches it."""

    def __init__(self) -> None:
        self.calls = 0
        self.real = judge_workers.call_litellm

    async def __call__(self, kwargs: dict[str, Any], *, structured: bool) -> CallReply:
        self.calls += 1
        return await self.real(kwargs, structured=structured)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_auto_transport_moves_to_workers_once_the_rate_is_sustained(judge_server, judge_config, monkeypatch):
    in_process = Counting()
    monkeypatch.setattr(judge_workers, "call_litellm", in_process)
    clock = Clock()
    transport = AutoTransport(processes=1, rate=2.0, window_s=5.0, clock=clock)
    client = JudgeClient(environ={}, transport=transport)
    judge_server.default_reply = Reply.json(GOOD)

    async def ask() -> None:
        answer = await client.ask(judge_config, instructions="J", prompt="p", schema=Verdict)
        assert answer.value.verdict == "yes"

    try:
        for _ in range(5):  # 6 calls over 6 s: 1/s, below the rate
            await ask()
            clock.now += 1.2
        await ask()
        assert transport.pool is None and transport._pool is None
        for _ in range(12):  # 12 calls over 5.5 s: above the rate, so a pool starts in the background
            await ask()
            clock.now += 0.5
        assert in_process.calls == 18
        assert transport._starting is not None
        await transport._starting
        pool = transport.pool
        assert pool is not None and len(pool.pids()) == 1
        await asyncio.gather(*(ask() for _ in range(4)))
        assert in_process.calls == 18  # every call after the pool was ready went to a worker

        # A call from another event loop (Scorer.run starts one per call) stays in this process.
        await asyncio.to_thread(asyncio.run, ask())
        assert in_process.calls == 19
    finally:
        await client.aclose()
    assert transport.pool is None and pool.pids() == []


# asyncio reports the dead loop's pipe transports when they are collected; that is the closed loop's doing.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_auto_pool_of_a_closed_loop_is_terminated_and_judging_goes_on(judge_server, judge_config):
    """A service stopped and started again in one process: its old loop's pool must not linger."""
    clock = Clock()
    transport = AutoTransport(processes=1, rate=2.0, window_s=1.0, clock=clock)
    client = JudgeClient(environ={}, transport=transport)
    judge_server.default_reply = Reply.json(GOOD)

    async def first_service() -> list[int]:
        for _ in range(4):
            await client.ask(judge_config, instructions="J", prompt="p", schema=Verdict)
            clock.now += 0.5
        assert transport._starting is not None
        await transport._starting
        assert transport.pool is not None
        return transport.pool.pids()

    pids = await asyncio.to_thread(asyncio.run, first_service())
    assert len(pids) == 1
    answer = await client.ask(judge_config, instructions="J", prompt="p", schema=Verdict)
    assert answer.value.verdict == "yes" and transport.pool is None
    for _ in range(100):
        if not _running(pids[0]):
            break
        await asyncio.sleep(0.05)
    assert not _running(pids[0])
    await client.aclose()
    gc.collect()


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def test_worker_pool_called_from_another_loop_judges_in_process(judge_server, judge_config, monkeypatch):
    in_process = Counting()
    monkeypatch.setattr(judge_workers, "call_litellm", in_process)
    transport = WorkerPoolTransport(processes=1)
    client = JudgeClient(environ={}, transport=transport)
    judge_server.default_reply = Reply.json(GOOD)
    try:
        await transport.start()
        await client.ask(judge_config, instructions="J", prompt="p", schema=Verdict)
        assert in_process.calls == 0
        answer = await asyncio.to_thread(
            asyncio.run, client.ask(judge_config, instructions="J", prompt="p", schema=Verdict)
        )
        assert answer.value.verdict == "yes" and in_process.calls == 1
    finally:
        await client.aclose()


def test_worker_processes_setting_picks_the_transport(monkeypatch):
    assert isinstance(transport_for(0), InProcessTransport)
    pool = transport_for(3)
    assert isinstance(pool, WorkerPoolTransport) and pool.processes == 3
    monkeypatch.setattr(judge_workers.os, "cpu_count", lambda: 2)
    auto = transport_for("auto")
    assert isinstance(auto, AutoTransport) and auto.processes == 2
    monkeypatch.setattr(judge_workers.os, "cpu_count", lambda: 16)
    assert isinstance(big := transport_for("auto"), AutoTransport) and big.processes == 4
    monkeypatch.setattr(judge_workers.os, "cpu_count", lambda: 1)
    assert isinstance(transport_for("auto"), InProcessTransport)  # one core: workers add only a pipe hop


def test_worker_processes_is_validated():
    assert JudgeConfig().worker_processes == "auto"
    assert JudgeConfig.model_validate({"worker_processes": 2}).worker_processes == 2
    for bad in (-1, "many"):
        with pytest.raises(ValidationError):
            JudgeConfig.model_validate({"worker_processes": bad})
