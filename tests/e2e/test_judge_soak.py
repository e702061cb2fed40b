"""Judge soak: live LLM scoring while the judge fails for a while (500s, 429s with Retry-After), then recovers."""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.judge.client import JudgeConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.reliability_figures import record_figures
from tests.fakes.fake_openai import FakeJudgeServer, Reply

OUTAGE_S = 6.0
RUNS_BEFORE, RUNS_DURING, RUNS_AFTER = 4, 16, 8
MAX_CONCURRENCY = 4
JUDGE_TIMEOUT_S = 1.0
RETRIES = 2
MAX_ATTEMPTS = 3
VERDICT = {"verdicts": [{"verdict": "no", "reason": "a polite factual answer"}]}


async def _query(service: Service, sql: str) -> list[tuple]:  # type: ignore[type-arg]
    return await asyncio.to_thread(service.store.internal_query, sql)


def _agent_run(number: int) -> list[ReadableSpan]:
    """One agent run whose answer names the run, so each judge prompt belongs to exactly one run."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "soak-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("agent").start_as_current_span("invoke_agent triage") as root:
        root.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "triage",
                "gen_ai.input.messages": _messages("user", f"Where is order {number}?"),
                "gen_ai.output.messages": _messages("assistant", f"Order {number} ships tomorrow."),
            }
        )
    provider.shutdown()
    return list(memory.get_finished_spans())


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


async def _send(service: Service, first: int, runs: int) -> None:
    for number in range(first, first + runs):  # one run per export, spread out like live traffic
        spans = _agent_run(number)
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        await asyncio.sleep(0.15)


@pytest.mark.slow
@pytest.mark.reliability("judge-failures-recorded")
async def test_judge_outage_is_recorded_never_invented_and_scoring_recovers(service_config: ServiceConfig) -> None:
    """The judge answers only 500s, 503s, 429s (Retry-After: 1) and too late for 6 s while runs arrive, then recovers.

    Checks: every run ends with exactly one score row; a score value exists only where the judge answered
    200 (never more OK rows than 200 answers), and each failed score has no value, status `error` and a
    `failed` decision; the circuit breaker opened during the outage and is closed at the end; no request
    followed a 429 for the same prompt sooner than its Retry-After; no job is left running or retrying; the
    judge never had more than max_concurrency requests in flight and the total number of judge calls stays
    within runs x attempts x tries (no retry storm).
    """
    async with FakeJudgeServer() as judge:
        judge.default_reply = Reply.json(VERDICT)
        service_config.judge = {
            "model": "openai/soak",
            "api_base": judge.base_url,
            "timeout_s": JUDGE_TIMEOUT_S,
            "max_concurrency": MAX_CONCURRENCY,
            "retries": RETRIES,
            "backoff_initial_s": 0.05,
            "backoff_max_s": 2.0,
            "breaker_failures": 3,
            "breaker_cooldown_s": 1.0,
        }
        service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
        service_config.scoring.poll_interval_s = 0.05
        service_config.scoring.max_attempts = MAX_ATTEMPTS
        service_config.rules = [RuleConfig.model_validate({"name": "soak", "scorers": ["toxicity"]})]
        service = Service(service_config)
        await service.start()
        assert service.live is not None
        judge_config = JudgeConfig.model_validate(service_config.judge)
        assert service.judge is not None
        breaker = service.judge.client.state_of(judge_config).breaker
        states: list[str] = []
        depths: list[int] = []
        sampling = True

        async def watch() -> None:
            assert service.live is not None
            while sampling:
                if not states or states[-1] != breaker.state:
                    states.append(breaker.state)
                depths.append(service.live.workers.depth)
                await asyncio.sleep(0.02)

        watcher = asyncio.create_task(watch())
        try:
            await _send(service, 0, RUNS_BEFORE)
            recovery = time.monotonic() + OUTAGE_S
            judge.fail_for(
                OUTAGE_S,
                Reply.error(500),
                Reply.error(429, retry_after="1"),
                Reply.error(503),
                Reply.error(429, retry_after="1"),
                Reply.error(500, delay_s=JUDGE_TIMEOUT_S + 0.5),  # the client times out first
            )
            await _send(service, RUNS_BEFORE, RUNS_DURING)
            await asyncio.sleep(max(0.0, recovery - time.monotonic()) + 0.05)
            assert not judge.failing
            await _send(service, RUNS_BEFORE + RUNS_DURING, RUNS_AFTER)
            total = RUNS_BEFORE + RUNS_DURING + RUNS_AFTER
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # bounded: every run scored or failed, nothing in flight
                rows = await _query(service, "SELECT count() FROM scores FINAL")
                states_now = service.live.workers.states
                if rows[0][0] >= total and not any(states_now[s] for s in ("pending", "running", "retrying")):
                    break
                await asyncio.sleep(0.2)
            await service.live.settle()
            job_states = dict(service.live.workers.states)
            scores = await _query(service, "SELECT TraceId, Status, Score, Error FROM scores FINAL")
            decisions = await _query(service, "SELECT TraceId, Decision FROM score_decisions FINAL")
        finally:
            sampling = False
            await watcher
            await service.shutdown()

    ok = [row for row in scores if row[1] == "ok"]
    failed = [row for row in scores if row[1] != "ok"]
    answered_ok = sum(1 for answer in judge.answers if answer.status == 200)
    early_retries = _requests_sooner_than_retry_after(judge.answers)
    figures = {
        "runs": total,
        "judge_outage_s": OUTAGE_S,
        "judge_requests": len(judge.answers),
        "judge_errors_served": {str(k): v for k, v in _by_status(judge.answers).items() if k != 200},
        "judge_200_answers": answered_ok,
        "scores_ok": len(ok),
        "scores_failed": len(failed),
        "decisions": dict(_count(row[1] for row in decisions)),
        "breaker_states_seen": states,
        "max_judge_requests_in_flight": judge.max_in_flight,
        "max_scoring_queue_depth": max(depths, default=0),
        "requests_sooner_than_retry_after": len(early_retries),
        "job_states_at_end": job_states,
    }
    record_figures("judge_soak", figures)
    print(json.dumps(figures, indent=1))

    # Every run has exactly one outcome, and every sampled decision was resolved.
    assert len(scores) == total and len({row[0] for row in scores}) == total, figures
    assert len(decisions) == total, figures
    # No invented scores: values only from 200 answers; failures have no value and say why.
    assert 0 < len(ok) <= answered_ok, figures
    assert all(row[2] is not None for row in ok)
    assert failed, "the outage failed no run: it was not an outage"
    assert all(row[2] is None and row[1] == "error" and row[3] for row in failed), failed[:3]
    failed_runs = {row[0] for row in failed}
    assert {row[0] for row in decisions if row[1] == "failed"} == failed_runs, figures
    assert {row[0] for row in decisions if row[1] != "failed"} == {row[0] for row in ok}, figures
    # The breaker opened during the outage, and is closed again once the judge recovered.
    assert "open" in states and states[-1] == "closed", states
    # Retry-After was honoured, and nothing grew without bound or hung.
    assert not early_retries, early_retries[:5]
    assert judge.max_in_flight <= MAX_CONCURRENCY
    assert len(judge.answers) <= total * MAX_ATTEMPTS * (RETRIES + 1), figures
    assert not any(job_states.get(state) for state in ("pending", "running", "retrying")), job_states


def _requests_sooner_than_retry_after(answers: list) -> list[tuple[str, float, float]]:  # type: ignore[type-arg]
    """(prompt, asked wait, actual wait) for every request that followed a hinted answer to the same prompt too soon.

    Requests are logged when answered; the next request was sent after the previous answer arrived, so the gap
    between two answers to one prompt is at least the wait the client chose (the 429s are answered at once).
    """
    by_prompt: dict[str, list] = defaultdict(list)  # type: ignore[type-arg]
    for answer in answers:
        by_prompt[answer.prompt].append(answer)
    early = []
    for prompt, series in by_prompt.items():
        for previous, following in zip(series, series[1:], strict=False):
            if previous.retry_after and previous.status == 429:
                waited = following.at - previous.at
                if waited < float(previous.retry_after) - 0.05:
                    early.append((prompt[-60:], float(previous.retry_after), round(waited, 3)))
    return early


def _by_status(answers: list) -> dict[int, int]:  # type: ignore[type-arg]
    return dict(_count(answer.status for answer in answers))


def _count(values: object) -> dict[object, int]:
    counts: dict[object, int] = defaultdict(int)
    for value in values:  # type: ignore[attr-defined]
        counts[value] += 1
    return counts
