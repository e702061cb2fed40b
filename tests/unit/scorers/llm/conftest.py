"""Fixtures for the judge and LLM scorer tests: a fake OpenAI-compatible judge on loopback."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

_TESTS = str(Path(__file__).resolve().parents[3])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from spanscore.scorers.judge import JudgeClient, JudgeConfig  # noqa: E402
from tests.fakes.fake_openai import FakeJudgeServer  # noqa: E402


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
