"""Fixtures for the judge and LLM scorer tests: a fake OpenAI-compatible judge on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from spanscore.scorers.judge.client import JudgeClient, JudgeConfig
from tests.fakes.fake_openai import FakeJudgeServer


@pytest.fixture
async def judge_server() -> AsyncIterator[FakeJudgeServer]:
    async with FakeJudgeServer() as server:
        yield server


@pytest.fixture
def judge_client() -> JudgeClient:
    """A fresh client per test: per-model memory (ladder rung, breaker) must not leak between tests."""

    async def no_sleep(_: float) -> None:
        return None

    return JudgeClient(environ={}, sleep=no_sleep)


@pytest.fixture
def judge_config(judge_server: FakeJudgeServer) -> JudgeConfig:
    """A config pointing at the fake server; tests pick the model name to select a script."""
    return JudgeConfig(model="openai/judge", api_base=judge_server.base_url, timeout_s=5.0, backoff_initial_s=0.0)


@pytest.fixture
def judge_options(judge_server: FakeJudgeServer, judge_client: JudgeClient) -> Callable[[str], dict[str, Any]]:
    """Scorer options that send every judge call of the scorer to ``openai/<model>`` on the fake server."""

    def options(model: str) -> dict[str, Any]:
        return {"model": f"openai/{model}", "judge": {"api_base": judge_server.base_url}, "client": judge_client}

    return options
