"""The judge client through worker processes: same answers, same failure handling, workers replaced when they die."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from spanscore.scorers.judge import JudgeClient, JudgeUnavailableError
from spanscore.scorers.judge_workers import WorkerPoolTransport
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
