"""The judge client against a real HTTP fake judge: ladder, validation, retries, breaker, accounting."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel, ValidationError

from spanscore.errors import PermanentError, RetryableError
from spanscore.scorers.judge.client import (
    JudgeAnswerError,
    JudgeClient,
    JudgeConfig,
    JudgeUnavailableError,
)
from spanscore.scorers.judge.litellm_call import litellm
from spanscore.scorers.judge.tracing import JUDGE_SPAN_ATTRIBUTE
from tests.fakes.fake_openai import ModelProfile, Reply


class Verdict(BaseModel):
    verdict: str
    reason: str


GOOD = {"verdict": "yes", "reason": "the context says so"}


async def ask(client: JudgeClient, config: JudgeConfig, model: str = "judge") -> Verdict:
    answer = await client.ask(
        config.with_overrides({"model": f"openai/{model}"}),
        instructions="Judge the claim.",
        prompt="<<<BEGIN claim>>>The sky is blue.<<<END claim>>>",
        schema=Verdict,
    )
    return answer.value


async def test_valid_answer_is_returned_with_tokens(judge_server, judge_client, judge_config):
    judge_server.script("judge", Reply.json(GOOD))
    answer = await judge_client.ask(judge_config, instructions="Judge.", prompt="p", schema=Verdict)
    assert answer.value == Verdict(**GOOD)
    assert answer.mode == "json_schema"
    assert (answer.spend.calls, answer.spend.input_tokens, answer.spend.output_tokens) == (1, 50, 20)
    request = judge_server.requests[-1]
    assert request["temperature"] == 0
    assert request["response_format"]["type"] == "json_schema"
    assert "ignore these rules" in request["messages"][0]["content"]


async def test_cost_comes_from_litellm_pricing(judge_server, judge_client, judge_config):
    judge_server.script("gpt-4o-mini", Reply.json(GOOD))
    config = judge_config.with_overrides({"model": "openai/gpt-4o-mini"})
    answer = await judge_client.ask(config, instructions="Judge.", prompt="p", schema=Verdict)
    prompt_cost, completion_cost = litellm.cost_per_token(model="gpt-4o-mini", prompt_tokens=50, completion_tokens=20)
    assert answer.spend.cost_usd == pytest.approx(prompt_cost + completion_cost)
    assert answer.spend.cost_usd > 0


async def test_json_inside_prose_and_fences_is_extracted(judge_server, judge_client, judge_config):
    prose = 'Sure! Here is my verdict:\n```json\n{"verdict": "no", "reason": "contradicted"}\n```\nHope this helps.'
    judge_server.script("judge", Reply.raw(prose))
    assert (await ask(judge_client, judge_config)).verdict == "no"


async def test_malformed_answer_is_asked_again_then_accepted(judge_server, judge_client, judge_config):
    judge_server.script("judge", Reply.raw('{"verdict": "yes", "reason": '), Reply.json(GOOD))
    assert (await ask(judge_client, judge_config)).verdict == "yes"
    retry = judge_server.requests[-1]["messages"]
    assert retry[-1]["role"] == "user" and "not valid" in retry[-1]["content"]
    assert retry[-2]["role"] == "assistant"


async def test_answer_of_wrong_shape_is_an_error_never_a_verdict(judge_server, judge_client, judge_config):
    judge_server.script("judge", Reply.json({"verdict": "yes"}), Reply.json({"score": 1}))
    with pytest.raises(JudgeAnswerError) as caught:
        await ask(judge_client, judge_config)
    assert isinstance(caught.value, PermanentError)
    assert caught.value.spend.calls == 2
    assert caught.value.spend.input_tokens == 100
    assert isinstance(caught.value.__cause__, ValidationError)


async def test_schema_less_model_steps_down_to_json_mode_and_is_remembered(judge_server, judge_client, judge_config):
    judge_server.profiles["plain"] = ModelProfile(json_schema=False)
    judge_server.script("plain", Reply.json(GOOD), Reply.json(GOOD))
    await ask(judge_client, judge_config, "plain")
    await ask(judge_client, judge_config, "plain")
    formats = [r.get("response_format", {}).get("type") for r in judge_server.requests]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert "JSON schema" in judge_server.requests[-1]["messages"][0]["content"]


async def test_model_without_json_modes_answers_through_a_tool_call(judge_server, judge_client, judge_config):
    judge_server.profiles["tooly"] = ModelProfile(json_schema=False, json_object=False)
    judge_server.script("tooly", Reply.json({"verdict": "unsure", "reason": "r"}))
    assert (await ask(judge_client, judge_config, "tooly")).verdict == "unsure"
    assert judge_server.requests[-1]["tool_choice"]["function"]["name"] == "submit_verdict"


async def test_model_with_nothing_structured_falls_back_to_text(judge_server, judge_client, judge_config):
    judge_server.profiles["bare"] = ModelProfile(json_schema=False, json_object=False, tools=False)
    judge_server.script("bare", Reply.raw('My answer: {"verdict": "yes", "reason": "ok",}'))
    assert (await ask(judge_client, judge_config, "bare")).verdict == "yes"
    last = judge_server.requests[-1]
    assert "response_format" not in last and "tools" not in last


async def test_empty_answer_from_reasoning_model_gets_more_room(judge_server, judge_client, judge_config):
    judge_server.script("thinker", Reply.raw("", finish_reason="length"), Reply.json(GOOD))
    assert (await ask(judge_client, judge_config, "thinker")).verdict == "yes"
    budgets = [r["max_tokens"] for r in judge_server.requests]
    assert budgets == [1024, 2048]


async def test_truncation_beyond_the_ceiling_is_an_error(judge_server, judge_client, judge_config):
    config = judge_config.with_overrides({"model": "openai/thinker", "max_tokens": 100, "max_tokens_ceiling": 200})
    judge_server.script("thinker", Reply.raw("", finish_reason="length"), Reply.raw("{", finish_reason="length"))
    with pytest.raises(JudgeAnswerError, match="truncated"):
        await judge_client.ask(config, instructions="J", prompt="p", schema=Verdict)


async def test_rate_limit_and_server_errors_are_retried_with_retry_after(judge_server, judge_config):
    delays: list[float] = []

    async def record(delay: float) -> None:
        delays.append(delay)

    client = JudgeClient(environ={}, sleep=record)
    judge_server.script("judge", Reply.error(429, retry_after="2"), Reply.error(500), Reply.json(GOOD))
    assert (await ask(client, judge_config)).verdict == "yes"
    assert len(judge_server.requests) == 3
    assert delays[0] >= 2.0


async def test_persistent_failure_is_retryable_error(judge_server, judge_client, judge_config):
    config = judge_config.with_overrides({"retries": 2})
    judge_server.script("judge", *[Reply.error(503)] * 3)
    with pytest.raises(JudgeUnavailableError) as caught:
        await judge_client.ask(config, instructions="J", prompt="p", schema=Verdict)
    assert isinstance(caught.value, RetryableError)
    assert len(judge_server.requests) == 3


async def test_timeout_is_retried(judge_server, judge_client, judge_config):
    config = judge_config.with_overrides({"timeout_s": 0.2})
    judge_server.script("judge", Reply.json(GOOD, delay_s=1.0), Reply.json(GOOD))
    answer = await judge_client.ask(config, instructions="J", prompt="p", schema=Verdict)
    assert answer.value.verdict == "yes"
    assert len(judge_server.requests) == 2


async def test_bad_request_without_structured_output_is_permanent(judge_server, judge_client, judge_config):
    config = judge_config.with_overrides({"structured_output": "text"})
    judge_server.script("judge", Reply.error(400))
    with pytest.raises(JudgeAnswerError, match="refused"):
        await judge_client.ask(config, instructions="J", prompt="p", schema=Verdict)


async def test_breaker_opens_fails_fast_and_recovers_after_cooldown(judge_server, judge_config):
    now = [0.0]

    async def no_sleep(_: float) -> None:
        return None

    client = JudgeClient(environ={}, sleep=no_sleep, clock=lambda: now[0])
    config = judge_config.with_overrides({"retries": 0, "breaker_failures": 2, "breaker_cooldown_s": 10})
    judge_server.script("judge", Reply.error(500), Reply.error(500), Reply.json(GOOD), Reply.json(GOOD))
    for _ in range(2):
        with pytest.raises(JudgeUnavailableError):
            await client.ask(config, instructions="J", prompt="p", schema=Verdict)
    with pytest.raises(JudgeUnavailableError, match="circuit open") as caught:
        await client.ask(config, instructions="J", prompt="p", schema=Verdict)
    assert caught.value.retry_after == pytest.approx(10)
    assert "last failure: " in str(caught.value) and "500" in str(caught.value), (
        caught.value
    )  # the cause, not only the state
    assert len(judge_server.requests) == 2
    now[0] = 11.0
    answer = await client.ask(config, instructions="J", prompt="p", schema=Verdict)
    assert answer.value.verdict == "yes"
    assert client.state_of(config).breaker.state == "closed"


async def test_concurrency_is_limited_per_model(judge_server, judge_client, judge_config):
    config = judge_config.with_overrides({"max_concurrency": 2})
    judge_server.script("judge", *[Reply.json(GOOD, delay_s=0.05)] * 6)
    await asyncio.gather(*[judge_client.ask(config, instructions="J", prompt="p", schema=Verdict) for _ in range(6)])
    assert judge_server.max_in_flight == 2


async def test_judge_calls_are_traced_and_marked(judge_server, judge_config):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = JudgeClient(tracer=provider.get_tracer("test"), environ={})
    judge_server.script("judge", Reply.json(GOOD))
    await client.ask(judge_config, instructions="J", prompt="p", schema=Verdict, scorer="faithfulness")
    (span,) = exporter.get_finished_spans()
    assert span.name == "chat judge"
    assert span.attributes is not None
    assert span.attributes[JUDGE_SPAN_ATTRIBUTE] is True
    assert span.attributes["gen_ai.usage.input_tokens"] == 50
    assert span.attributes["spanscore.judge.scorer"] == "faithfulness"


def test_inline_api_key_is_refused():
    with pytest.raises(ValidationError, match="api_key_env"):
        JudgeConfig.model_validate({"model": "openai/x", "api_key": "sk-123"})


def test_api_key_comes_from_the_named_variable_or_file(tmp_path):
    config = JudgeConfig(api_key_env="JUDGE_KEY")
    assert config.resolve_api_key({"JUDGE_KEY": "k1"}) == "k1"
    with pytest.raises(PermanentError, match="JUDGE_KEY"):
        config.resolve_api_key({})
    secret = tmp_path / "key"
    secret.write_text("k2\n")
    assert JudgeConfig(api_key_file=secret).resolve_api_key({}) == "k2"


def test_overrides_merge_and_validate():
    base = JudgeConfig(model="openai/a", timeout_s=3)
    assert base.with_overrides("anthropic/b").model == "anthropic/b"
    merged = base.with_overrides({"max_tokens": 64})
    assert (merged.model, merged.timeout_s, merged.max_tokens) == ("openai/a", 3, 64)
    with pytest.raises(ValidationError):
        base.with_overrides({"timeout_s": -1})


async def test_a_server_that_never_listens_is_unavailable(judge_client):
    config = JudgeConfig(model="openai/judge", api_base="http://127.0.0.1:9/v1", retries=1, backoff_initial_s=0)
    with pytest.raises(JudgeUnavailableError):
        await judge_client.ask(config, instructions="J", prompt="p", schema=Verdict)


async def test_a_400_that_no_mode_fixes_does_not_degrade_the_model(judge_server, judge_client, judge_config):
    judge_server.script("judge", *[Reply.error(400)] * 4, Reply.json(GOOD))
    with pytest.raises(JudgeAnswerError, match="refused"):
        await ask(judge_client, judge_config)
    assert len(judge_server.requests) == 4  # json_schema, json_mode, tool_call, text
    await ask(judge_client, judge_config)
    assert judge_server.requests[-1]["response_format"]["type"] == "json_schema"


async def test_failed_judge_calls_are_traced_with_error_status(judge_server, judge_config):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = JudgeClient(tracer=provider.get_tracer("test"), environ={}, sleep=_no_sleep)
    judge_server.script("judge", Reply.error(500), Reply.json(GOOD))
    await client.ask(judge_config, instructions="J", prompt="p", schema=Verdict)
    failed, succeeded = exporter.get_finished_spans()
    assert not failed.status.is_ok and failed.attributes is not None
    assert failed.attributes["error.type"] == "InternalServerError"
    assert succeeded.status.is_unset


async def _no_sleep(_: float) -> None:
    return None


async def test_a_judge_without_a_model_sends_nothing_and_says_how_to_name_one(judge_server, judge_client):
    """No implicit provider: the library default names no model, so nothing can reach a provider unasked."""
    config = JudgeConfig(api_base=judge_server.base_url, timeout_s=5.0)
    assert config.model == ""
    with pytest.raises(JudgeAnswerError, match="no judge model is configured"):
        await judge_client.ask(config, instructions="Judge the claim.", prompt="The sky is blue.", schema=Verdict)
    assert judge_server.requests == []
