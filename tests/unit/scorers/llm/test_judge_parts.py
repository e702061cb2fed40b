"""Pure parts of the judge: tolerant verdict extraction, failure classification, backoff, circuit breaker."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from litellm.exceptions import BadRequestError, ContextWindowExceededError, RateLimitError, Timeout
from pydantic import BaseModel, ValidationError

from spanscore.scorers.judge.output import AnswerFormatError, OutputMode, parse_verdict, request_options, schema_of
from spanscore.scorers.judge.resilience import (
    BreakerOpenError,
    CircuitBreaker,
    Failure,
    backoff_delay,
    classify,
)


class Verdict(BaseModel):
    verdict: str
    score: float


@pytest.mark.parametrize(
    "text",
    [
        '{"verdict": "yes", "score": 0.5}',
        '```json\n{"verdict": "yes", "score": 0.5}\n```',
        '<think>maybe {"verdict": "no"}</think>Final: {"verdict": "yes", "score": 0.5}',
        'Here you go: {"verdict": "yes", "score": 0.5,} -- done',
        '{"note": "draft"} then {"verdict": "yes", "score": 0.5}',
        '{"wrapper": {"verdict": "yes", "score": 0.5}}',
    ],
)
def test_verdict_is_found_wherever_the_judge_put_it(text: str):
    assert parse_verdict(text, Verdict) == Verdict(verdict="yes", score=0.5)


def test_no_json_and_wrong_json_are_told_apart():
    with pytest.raises(AnswerFormatError):
        parse_verdict("I'd say it is supported.", Verdict)
    with pytest.raises(ValidationError):
        parse_verdict('{"verdict": "yes", "score": "high"}', Verdict)


@given(prefix=st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=40), suffix=st.text(max_size=40))
def test_a_valid_object_survives_any_prose_before_it(prefix: str, suffix: str):
    text = prefix + json.dumps({"verdict": "no", "score": 1.0}) + suffix
    assert parse_verdict(text, Verdict).verdict == "no"


def test_request_options_per_mode_and_cached_schema_without_titles():
    schema = schema_of(Verdict)
    assert schema is schema_of(Verdict)
    assert "title" not in schema and schema["properties"]["verdict"] == {"type": "string"}
    assert request_options(OutputMode.JSON_SCHEMA, "v", schema)["response_format"]["type"] == "json_schema"
    assert request_options(OutputMode.JSON_MODE, "v", schema) == {"response_format": {"type": "json_object"}}
    assert request_options(OutputMode.TOOL_CALL, "v", schema)["tools"][0]["function"]["parameters"] is schema
    assert request_options(OutputMode.TEXT, "v", schema) == {}
    assert OutputMode.TEXT.next_down() is None


def _bad_request(message: str) -> BadRequestError:
    response = httpx.Response(400, request=httpx.Request("POST", "http://127.0.0.1/v1"))
    return BadRequestError(message, model="m", llm_provider="openai", response=response)


def test_failures_are_classified():
    assert classify(RateLimitError("slow down", llm_provider="openai", model="m"), structured=True) is Failure.TRANSIENT
    assert classify(Timeout("late", model="m", llm_provider="openai"), structured=False) is Failure.TRANSIENT
    assert classify(TimeoutError(), structured=False) is Failure.TRANSIENT
    assert classify(_bad_request("response_format unsupported"), structured=True) is Failure.MODE_REFUSED
    assert classify(_bad_request("bad"), structured=False) is Failure.PERMANENT
    too_long = ContextWindowExceededError("too long", model="m", llm_provider="openai")
    assert classify(too_long, structured=True) is Failure.PERMANENT


@given(attempt=st.integers(0, 20), draw=st.floats(0, 1), hint=st.none() | st.floats(0, 100))
def test_backoff_is_full_jitter_bounded_and_respects_the_hint(attempt: int, draw: float, hint: float | None):
    delay = backoff_delay(attempt, initial_s=0.5, max_s=30, hint_s=hint, draw=lambda: draw)
    assert 0 <= delay <= 30
    assert delay <= max(min(30, 0.5 * 2**attempt), min(hint or 0, 30)) + 1e-9
    if hint is not None:
        assert delay >= min(hint, 30)


def test_breaker_half_open_allows_one_probe():
    now = [0.0]
    breaker = CircuitBreaker("m", failure_threshold=2, cooldown_s=5, clock=lambda: now[0])
    breaker.record_failure()
    breaker.admit()
    breaker.record_failure()
    assert breaker.state == "open"
    with pytest.raises(BreakerOpenError):
        breaker.admit()
    now[0] = 6
    assert breaker.state == "half_open"
    breaker.admit()  # the probe
    with pytest.raises(BreakerOpenError):
        breaker.admit()  # a second caller waits for the probe
    breaker.record_failure()
    assert breaker.state == "open"
    now[0] = 12
    breaker.admit()
    breaker.record_success()
    assert breaker.state == "closed"
    breaker.admit()
