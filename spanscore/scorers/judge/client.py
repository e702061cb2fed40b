"""The LLM judge client: one validated, accounted verdict per ``ask``, through litellm.

LLM scorer steps call :meth:`JudgeClient.ask` with instructions, a prompt and
a pydantic schema. The client sends the prompt to any litellm model
(``openai/...``, ``anthropic/...``, ``ollama/...`` or an OpenAI-compatible
``api_base``) at temperature 0, asks for structured output on the strongest
rung of the ladder the model accepts (see ``judge_output``), validates the
answer, and returns it with the tokens and cost of every call it took.

What can go wrong is handled here and nowhere else: per-model concurrency
limits, a timeout per request, retries with full-jitter backoff on 429/5xx/
timeouts, a circuit breaker per model (``judge_resilience``), more room for
reasoning models that answer empty or truncated, and a re-ask when the answer
does not validate. When all of that fails the client raises a ``JudgeError``
carrying what was spent; it never makes up a verdict.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from opentelemetry import trace
from pydantic import BaseModel, ValidationError

from spanscore.scorers.judge.answer_checks import AnswerCheck
from spanscore.scorers.judge.causes import plain_cause
from spanscore.scorers.judge.config import JudgeConfig
from spanscore.scorers.judge.errors import JudgeAnswerError, JudgeError, JudgeSpend, JudgeUnavailableError
from spanscore.scorers.judge.health import JudgeHealth
from spanscore.scorers.judge.messages import (
    DATA_RULE,
    AnswerMismatchError,
    Attempt,
    describe_problem,
    request_kwargs,
)
from spanscore.scorers.judge.output import (
    MODE_BY_LABEL,
    AnswerFormatError,
    OutputMode,
    parse_verdict,
    schema_of,
)
from spanscore.scorers.judge.resilience import (
    BreakerOpenError,
    CircuitBreaker,
    Failure,
    backoff_delay,
    classify,
    retry_after,
)
from spanscore.scorers.judge.tracing import JudgeTracer, annotate_reply
from spanscore.scorers.judge.transport import CallFailed, Reply, Transport
from spanscore.scorers.judge.workers import transport_for

__all__ = [
    "DATA_RULE",
    "JudgeAnswer",
    "JudgeAnswerError",
    "JudgeClient",
    "JudgeConfig",
    "JudgeError",
    "JudgeSpend",
    "JudgeUnavailableError",
]

logger = logging.getLogger(__name__)

VerdictT = TypeVar("VerdictT", bound=BaseModel)


@dataclass(frozen=True)
class JudgeAnswer(Generic[VerdictT]):
    """A validated verdict and what it took to get it."""

    value: VerdictT
    model: str
    mode: str
    prompt: str
    spend: JudgeSpend
    duration_ms: float


@dataclass
class _ModelState:
    """What the client remembers about one model: its limits, its breaker, the rung and room it needs."""

    semaphore: asyncio.Semaphore
    breaker: CircuitBreaker
    mode: OutputMode
    max_tokens: int
    loop: asyncio.AbstractEventLoop | None = None


class JudgeClient:
    """Asks judges for verdicts; one instance is shared by every scorer so per-model limits hold globally.

    ``transport`` decides where litellm runs: in this process (``InProcessTransport``), in worker processes
    (``judge_workers.WorkerPoolTransport``), or in-process until the call rate calls for workers
    (``judge_workers.AutoTransport``): the one ``worker_processes`` names (the ``judge:`` section's,
    ``auto`` by default). ``sleep`` and ``clock`` are injectable for tests.
    """

    def __init__(
        self,
        *,
        tracer: trace.Tracer | None = None,
        environ: Mapping[str, str] | None = None,
        sleep: Any = asyncio.sleep,
        clock: Any = time.monotonic,
        transport: Transport | None = None,
        worker_processes: int | Literal["auto"] | None = None,
    ) -> None:
        if worker_processes is None:
            worker_processes = JudgeConfig().worker_processes
        self._transport: Transport = transport or transport_for(worker_processes)
        self._states: dict[tuple[str, str | None], _ModelState] = {}
        self._tracer = JudgeTracer(tracer)
        self._environ = os.environ if environ is None else environ
        self._sleep = sleep
        self._clock = clock
        self.health = JudgeHealth(clock)
        """Which models are failing now, since when and why (``spanscore status``, the dashboard)."""

    async def aclose(self) -> None:
        """Stop the transport's worker processes, if any; idempotent, safe without a call ever made."""
        await self._transport.shutdown()

    def state_of(self, config: JudgeConfig) -> _ModelState:
        key = (config.model, config.api_base)
        state = self._states.get(key)
        if state is None:
            first = (
                OutputMode.JSON_SCHEMA
                if config.structured_output == "auto"
                else MODE_BY_LABEL[config.structured_output]
            )
            state = _ModelState(
                semaphore=asyncio.Semaphore(config.max_concurrency),
                breaker=CircuitBreaker(
                    config.model,
                    failure_threshold=config.breaker_failures,
                    cooldown_s=config.breaker_cooldown_s,
                    clock=self._clock,
                ),
                mode=first,
                max_tokens=config.max_tokens,
            )
            self._states[key] = state
        loop = asyncio.get_running_loop()
        if state.loop is not loop:
            # A semaphore belongs to one event loop; ``Scorer.run`` starts a fresh loop per call.
            state.semaphore = asyncio.Semaphore(config.max_concurrency)
            state.loop = loop
        return state

    async def ask(
        self,
        config: JudgeConfig,
        *,
        instructions: str,
        prompt: str,
        schema: type[VerdictT],
        name: str = "verdict",
        scorer: str | None = None,
        check: AnswerCheck | None = None,
    ) -> JudgeAnswer[VerdictT]:
        """Return a verdict validated against ``schema`` (and ``check``, when given) or raise ``JudgeError``.

        ``check`` lists how a schema-valid answer fails the question (see ``judge_checks``); an answer with
        problems is re-asked like an invalid one, quoting them, and never returned.
        """
        _require_model(config)
        started = time.perf_counter()
        state = self.state_of(config)
        spend = JudgeSpend(model=config.model)
        json_schema = schema_of(schema)
        api_key = config.resolve_api_key(self._environ)
        conversation: list[dict[str, str]] = [{"role": "user", "content": prompt}]
        answer_failures = 0
        max_tokens = state.max_tokens
        while True:
            attempt = Attempt(state.mode, max_tokens, conversation)
            reply = await self._complete(
                config, state, attempt, instructions, json_schema, name, api_key, spend, scorer
            )
            text, finish_reason = reply.text, reply.finish_reason
            if not text.strip() or finish_reason == "length":
                if max_tokens < config.max_tokens_ceiling:
                    max_tokens = min(config.max_tokens_ceiling, max_tokens * 2)
                    state.max_tokens = max(state.max_tokens, max_tokens)
                    logger.info("judge answer empty or truncated model=%s max_tokens=%d", config.model, max_tokens)
                    continue
                raise JudgeAnswerError(
                    f"judge {config.model}: answer empty or truncated even with max_tokens={max_tokens}", spend=spend
                )
            try:
                value = _checked(text, schema, check)
            except (AnswerFormatError, ValidationError, AnswerMismatchError) as exc:
                answer_failures += 1
                problem = describe_problem(exc)
                if answer_failures > config.answer_retries:
                    raise JudgeAnswerError(
                        f"judge {config.model}: invalid answer after {answer_failures} tries: {problem}", spend=spend
                    ) from exc
                conversation = _reasked(conversation, text, problem)
                continue
            return JudgeAnswer(
                value=value,
                model=config.model,
                mode=reply.mode_sent or attempt.mode.label,
                prompt=prompt,
                spend=spend,
                duration_ms=(time.perf_counter() - started) * 1000.0,
            )

    async def _complete(
        self,
        config: JudgeConfig,
        state: _ModelState,
        attempt: Attempt,
        instructions: str,
        json_schema: dict[str, Any],
        name: str,
        api_key: str | None,
        spend: JudgeSpend,
        scorer: str | None,
    ) -> Reply:
        """One completion, with retries on transient failures and steps down the ladder on refused modes."""
        transient_failures = 0
        while True:
            mode = state.mode if state.mode >= attempt.mode else attempt.mode
            attempt.mode = mode
            try:
                state.breaker.admit()
            except BreakerOpenError as exc:
                self.health.failed(config.model, None)
                raise JudgeUnavailableError(str(exc), spend=spend, retry_after=exc.retry_after) from exc
            kwargs = request_kwargs(config, mode, attempt, instructions, json_schema, name, api_key)
            structured = mode is not OutputMode.TEXT
            try:
                reply = await self._call(config, state, mode, scorer, kwargs)
            except Exception as exc:
                if isinstance(exc, CallFailed):
                    failure, hint, problem = exc.failure, exc.retry_after, str(exc)
                else:  # our own timeout, or a transport problem
                    failure, hint, problem = classify(exc, structured=structured), retry_after(exc), plain_cause(exc)
                if failure is Failure.MODE_REFUSED:
                    state.breaker.release()
                    lower = mode.next_down()
                    assert lower is not None  # TEXT is never "refused": classify needs structured=True
                    logger.info(
                        "judge refused output mode model=%s mode=%s next=%s", config.model, mode.label, lower.label
                    )
                    attempt.mode = lower  # remembered for the model only once the lower rung works
                    continue
                if failure is Failure.PERMANENT:
                    state.breaker.release()
                    raise JudgeAnswerError(f"judge {config.model}: request refused: {problem}", spend=spend) from exc
                state.breaker.record_failure(str(problem))
                self.health.failed(config.model, problem)
                delay = _retry_delay(config, transient_failures, hint, problem, spend, exc)
                transient_failures += 1
                # WARNING: an unreachable or failing judge is an operator's problem, and scores end in errors.
                logger.warning("judge call failed model=%s retry_in=%.2fs cause=%s", config.model, delay, problem)
                await self._sleep(delay)
                continue
            state.breaker.record_success()
            self.health.answered(config.model)
            if attempt.mode > state.mode:
                logger.info("judge output mode remembered model=%s mode=%s", config.model, attempt.mode.label)
                state.mode = attempt.mode
            spend.add(reply)
            return reply

    async def _call(
        self, config: JudgeConfig, state: _ModelState, mode: OutputMode, scorer: str | None, kwargs: dict[str, Any]
    ) -> Reply:
        """One request within the model's concurrency limit and timeout, traced as one judge call."""
        async with state.semaphore:
            with self._tracer.call(config.model, mode.label, scorer) as span:
                try:
                    async with asyncio.timeout(config.timeout_s):
                        reply = await self._transport.complete(kwargs, structured=mode is not OutputMode.TEXT)
                except BaseException as exc:
                    span.record_error(exc)
                    raise
                annotate_reply(span, reply, mode.label)
        return reply


def _require_model(config: JudgeConfig) -> None:
    if not config.model:
        raise JudgeAnswerError(
            "no judge model is configured: name one under judge: (e.g. model: openai/gpt-4o-mini with "
            "api_key_env), or in the scorer's judge/model option; spanscore never picks a provider itself",
            spend=JudgeSpend(model=""),
        )


def _checked(text: str, schema: type[VerdictT], check: AnswerCheck | None) -> VerdictT:
    """The answer parsed into ``schema``; raises when it does not parse, validate or answer the question."""
    value = parse_verdict(text, schema)
    mismatches = check(value.model_dump(mode="json")) if check is not None else []
    if mismatches:
        raise AnswerMismatchError("; ".join(mismatches[:5]))
    return value


def _reasked(conversation: list[dict[str, str]], text: str, problem: str) -> list[dict[str, str]]:
    """The conversation with the invalid answer and a request to answer again, naming what was wrong."""
    return [
        *conversation,
        {"role": "assistant", "content": text[:4000]},
        {
            "role": "user",
            "content": f"That answer was not valid ({problem}). Reply again with only "
            "the complete JSON object, matching the schema exactly.",
        },
    ]


def _retry_delay(
    config: JudgeConfig, failures: int, hint: float | None, problem: str, spend: JudgeSpend, exc: Exception
) -> float:
    """How long to wait before the next try of a transient failure, or ``JudgeUnavailableError`` to give up.

    A provider's wait longer than this call may sleep (backoff_max_s) is not retried here, where every try
    would land inside the window it asked us to stay away for: the scoring job is retried later instead, no
    sooner than the hint (the job's retry honours ``retry_after``).
    """
    if failures >= config.retries or (hint is not None and hint > config.backoff_max_s):
        raise JudgeUnavailableError(
            f"judge {config.model}: gave up after {failures + 1} tries: {problem}",
            spend=spend,
            retry_after=max(config.backoff_initial_s, hint or 0.0),
        ) from exc
    return backoff_delay(failures, initial_s=config.backoff_initial_s, max_s=config.backoff_max_s, hint_s=hint)
