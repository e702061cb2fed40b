"""Judges beyond OpenAI (#32): Anthropic, Gemini and Ollama wire formats on loopback, through real litellm.

Each provider's fake (``tests/fakes/fake_providers.py``) answers the requests litellm builds for the real
provider, so these tests see what litellm actually sent: the structured-output mode it chose (a forced
tool call for Anthropic models it does not know), the parameters, the key, the path.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanscore.run import Run
from spanscore.scorers import build
from spanscore.scorers.base import Status
from spanscore.scorers.judge.client import JudgeClient, JudgeConfig, JudgeUnavailableError
from tests.fakes.fake_openai import Reply
from tests.fakes.fake_providers import FakeProviderServer

COMPANY = Run(
    input="What's the company's growth like?",
    output="The company has grown from 100 employees in 2020 to 500 now, and might expand to 1000 by next year.",
    context=["The company had 100 employees in 2020.", "Current employee count is approximately 500."],
)
CLAIMS = {"claims": ["The company had 100 employees in 2020.", "It has 500 now.", "It might reach 1000 next year."]}
VERDICTS = {
    "verdicts": [
        {"verdict": "yes", "reason": "stated"},
        {"verdict": "yes", "reason": "stated"},
        {"verdict": "unsure", "reason": "a forecast"},
    ]
}

# (fake kind, litellm model, the mode litellm sends for a json_schema request, the path it posts to, priced)
# litellm has no price for claude-3-5-haiku-latest nor gemini-judge; Ollama models are local, priced at 0.
PROVIDERS = [
    ("anthropic", "anthropic/claude-3-5-haiku-latest", "tool_call", "/v1/messages", False),
    ("anthropic", "anthropic/claude-haiku-4-5", "json_schema", "/v1/messages", True),
    # A Gemini model litellm does not know gets JSON mode with the schema pasted into the prompt.
    ("gemini", "gemini/gemini-judge", "json_mode", "/v1beta/models/gemini-judge:generateContent", False),
    ("gemini", "gemini/gemini-2.5-flash", "json_schema", "/v1beta/models/gemini-2.5-flash:generateContent", True),
    ("ollama", "ollama/llama-judge", "json_schema", "/api/generate", True),
    ("ollama", "ollama_chat/llama-judge", "json_schema", "/api/chat", True),
]


async def _no_sleep(_: float) -> None:
    return None


@pytest.mark.parametrize(("kind", "model", "mode", "path", "priced"), PROVIDERS)
async def test_faithfulness_scores_and_records_what_litellm_sent(
    kind: str, model: str, mode: str, path: str, priced: bool
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = JudgeClient(tracer=provider.get_tracer("test"), environ={"JUDGE_KEY": "k-123"}, worker_processes=0)
    async with FakeProviderServer(kind) as fake:
        name = model.split("/", 1)[1]
        fake.script(name, Reply.json(CLAIMS), Reply.json(VERDICTS))
        judge = {"api_base": fake.api_base, "api_key_env": "JUDGE_KEY", "timeout_s": 5}
        result = await build("faithfulness", model=model, judge=judge, client=client).arun(COMPANY)
    assert result.status is Status.OK, result.error
    assert result.score == 0.67
    assert [seen.path for seen in fake.requests if seen.path != "/api/show"] == [path, path]
    # The mode recorded is the one on the wire, not the rung spanscore asked for.
    assert result.judge_mode == mode
    assert result.to_dict()["judge_mode"] == mode
    # A name litellm cannot price has an unknown cost, never a confident 0.
    assert result.cost_known is priced
    assert (result.to_dict()["cost_usd"] is None) is (not priced)
    assert result.to_dict()["cost"] == ("priced" if priced else "unknown")
    spans = exporter.get_finished_spans()
    assert len(spans) == 2
    for span in spans:
        attributes = span.attributes or {}
        assert attributes["spanscore.judge.output_mode"] == mode
        assert attributes["spanscore.judge.requested_mode"] == "json_schema"
        assert attributes["gen_ai.request.max_tokens"] == 1024
        assert attributes["gen_ai.request.temperature"] == 0.0
        assert attributes["spanscore.judge.cost"] == ("priced" if priced else "unknown")


@pytest.mark.parametrize(("kind", "model"), [("anthropic", "anthropic/claude-judge"), ("gemini", "gemini/g")])
async def test_no_placeholder_key_goes_to_a_provider_that_needs_a_real_one(kind: str, model: str) -> None:
    """Without a key setting, litellm's own variable (ANTHROPIC_API_KEY, GEMINI_API_KEY) is used, not 'unused'."""
    client = JudgeClient(environ={}, worker_processes=0)
    async with FakeProviderServer(kind) as fake:
        fake.script(model.split("/", 1)[1], Reply.json({"ok": True}))
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("ANTHROPIC_API_KEY", "from-env")
            patch.setenv("GEMINI_API_KEY", "from-env")
            config = JudgeConfig(model=model, api_base=fake.api_base, timeout_s=5)
            await _ask_ok(client, config)
    headers = fake.requests[0].headers
    sent = headers.get("x-api-key") or headers.get("x-goog-api-key") or headers.get("Authorization", "")
    assert "unused" not in sent and "from-env" in sent


async def test_ollama_gets_no_placeholder_key() -> None:
    client = JudgeClient(environ={}, worker_processes=0)
    async with FakeProviderServer("ollama") as fake:
        config = JudgeConfig(model="ollama/llama-judge", api_base=fake.api_base, timeout_s=5)
        await _ask_ok(client, config)
    assert "unused" not in fake.requests[0].headers.get("Authorization", "")


async def test_gemini_retry_delay_in_the_body_is_honoured() -> None:
    """A 429 whose delay is only in the body (RetryInfo), with no Retry-After header, waits that long."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    client = JudgeClient(environ={}, sleep=sleep, worker_processes=0)
    async with FakeProviderServer("gemini") as fake:
        fake.script("g", Reply.error(429, retry_delay="2.5s"), Reply.json({"ok": True}))
        config = JudgeConfig(model="gemini/g", api_base=fake.api_base, api_key_env=None, timeout_s=5)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("GEMINI_API_KEY", "k")
            await _ask_ok(client, config)
    assert len(slept) == 1 and slept[0] >= 2.5


async def test_a_retry_delay_beyond_the_deadline_gives_up_at_once_and_reports_it() -> None:
    """A 30 s hint longer than the client may wait (backoff_max_s) is handed to the job's retry, not slept."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    client = JudgeClient(environ={}, sleep=sleep, worker_processes=0)
    async with FakeProviderServer("gemini") as fake:
        fake.script("g", *[Reply.error(429, retry_delay="30s")] * 4)
        config = JudgeConfig(model="gemini/g", api_base=fake.api_base, timeout_s=5, backoff_max_s=10)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("GEMINI_API_KEY", "k")
            with pytest.raises(JudgeUnavailableError) as raised:
                await _ask_ok(client, config)
    assert raised.value.retry_after == 30.0
    assert slept == [] and len(fake.requests) == 1


async def test_openai_style_try_again_in_message_is_a_hint_too() -> None:
    from spanscore.scorers.judge.hints import body_retry_delay

    assert body_retry_delay("Rate limit reached ... Please try again in 1.5s. Visit ...") == 1.5
    assert body_retry_delay("Please try again in 750ms.") == 0.75
    assert body_retry_delay('{"error": {"details": [{"retryDelay": "30s"}]}}') == 30.0
    assert body_retry_delay('{"retryDelay":"0.25s"}') == 0.25
    assert body_retry_delay("nothing here") is None


async def _ask_ok(client: JudgeClient, config: JudgeConfig) -> Any:
    from pydantic import BaseModel

    class Ok(BaseModel):
        ok: bool

    return await client.ask(config, instructions="Judge.", prompt="Is it ok?", schema=Ok)
