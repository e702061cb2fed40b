"""Preview, backfill, status and demo, through the API and the CLI."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import TraceState, get_current_span

from spanscore.config import ServiceConfig
from spanscore.offline.backfill import backfill, stored_runs
from spanscore.sampling.engine import preview_run
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import agent_traces
from tests.e2e.test_process import _free_port, _start


async def _post(port: int, path: str, payload: dict) -> tuple[int, dict]:  # type: ignore[type-arg]
    async with aiohttp.ClientSession() as session:
        async with session.post(f"http://127.0.0.1:{port}/api/v1/{path}", json=payload) as response:
            return response.status, await response.json()


class _UpstreamRandomness(Sampler):
    """Stands in for an upstream consistent-probability sampler: each new trace gets ``ot=rv:<random>``."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def should_sample(  # type: ignore[no-untyped-def]
        self, parent_context, trace_id, name, kind=None, attributes=None, links=None, trace_state=None
    ) -> SamplingResult:
        parent = get_current_span(parent_context).get_span_context()
        if parent.is_valid:
            return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes, parent.trace_state)
        randomness = f"rv:{self._random.getrandbits(56):014x}"
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes, TraceState([("ot", randomness)]))

    def get_description(self) -> str:
        return "UpstreamRandomness"


def _kept_by_randomness(spans: list, probability: float) -> set[str]:  # type: ignore[type-arg]
    """Trace ids whose root carries an ``rv`` at or above the threshold of ``probability``."""
    threshold = (1 << 56) - round(probability * (1 << 56))
    return {
        f"{span.context.trace_id:032x}"
        for span in spans
        if span.parent is None and int(span.context.trace_state["ot"].removeprefix("rv:"), 16) >= threshold
    }


async def test_preview_matches_live_and_backfill_is_idempotent(service_config: ServiceConfig) -> None:
    service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    service_config.scoring.poll_interval_s = 0.05
    live_rule = RuleConfig.model_validate({"name": "live", "sample": 0.5, "scorers": ["completeness"]})
    later_rule = RuleConfig.model_validate({"name": "later", "sample": 0.5, "scorers": ["completeness"]})
    service_config.rules = [live_rule, later_rule]
    service = Service(service_config)
    await service.start()
    try:
        # The roots carry upstream sampling randomness (tracestate ot=rv:...), which every path must draw from.
        traces = agent_traces(40, sampler=_UpstreamRandomness(seed=7))
        expected_sampled = _kept_by_randomness(traces, 0.5)
        assert 0 < len(expected_sampled) < 40
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), traces) == "SUCCESS"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            rows = await asyncio.to_thread(
                service.store.internal_query, "SELECT count() FROM score_decisions FINAL WHERE Rule = 'live'"
            )
            if rows[0][0] >= 40:
                break
            await asyncio.sleep(0.2)
        live_sampled = await asyncio.to_thread(
            service.store.internal_query,
            "SELECT TraceId FROM score_decisions FINAL WHERE Rule = 'live' AND Decision = 'sampled'",
        )
        assert {row[0] for row in live_sampled} == expected_sampled
        status, preview = await _post(service.api.port, "rules/preview", {"rule": "live", "since": "1h"})
        assert status == 200
        assert preview["candidates"] == 40 and preview["matched"] == 40
        assert preview["sampled"] == len(expected_sampled)  # one decision rule everywhere: preview == live

        # Backfill a rule the live loop never ran, twice: the second pass skips every scored run and
        # no score is duplicated.
        offline = RuleConfig.model_validate({"name": "offline", "sample": 0.5, "scorers": ["completeness"]})
        runs = service_config.collector.runs
        first = await backfill(service.store, offline, 3600, runs)
        expected = sum(preview_run([offline], run)[0].sampled for run in stored_runs(service.store, 3600, runs))
        assert first["candidates"] == 40 and first["scores_written"] == expected > 0
        second = await backfill(service.store, offline, 3600, runs)
        assert second["scores_written"] == 0 and second["skipped_already_scored"] == expected
        counts = await asyncio.to_thread(
            service.store.internal_query, "SELECT count(), uniqExact(ScoreId) FROM scores WHERE Rule = 'offline'"
        )
        assert counts[0] == (expected, expected)
        backfilled = await asyncio.to_thread(
            service.store.internal_query, "SELECT DISTINCT TraceId FROM scores WHERE Rule = 'offline'"
        )
        assert {row[0] for row in backfilled} == expected_sampled  # same rate, same randomness: same runs
        # Backfilled runs are explained like live ones: what the scorers received is stored for each.
        explained = await asyncio.to_thread(
            service.store.internal_query,
            "SELECT DISTINCT TraceId FROM scored_runs FINAL WHERE TraceId IN "
            "(SELECT TraceId FROM scores WHERE Rule = 'offline')",
        )
        assert {row[0] for row in explained} == expected_sampled
        status, via_api = await _post(service.api.port, "backfill", {"rule": "later", "since": "1h"})
        assert status == 200 and via_api["candidates"] == 40

        status, problem = await _post(service.api.port, "rules/preview", {"rule": "nope"})
        assert status == 400 and "unknown rule 'nope'" in problem["error"]
    finally:
        await service.shutdown()


async def test_a_backfill_after_an_outage_scores_the_runs_that_failed_again(service_config: ServiceConfig) -> None:
    """Scores that ended in an error during an outage are not 'already scored': the next backfill repairs them."""
    from tests.e2e import flaky_scorer

    service_config.rules = []
    service = Service(service_config)
    await service.start()
    try:
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), agent_traces(6)) == "SUCCESS"
        runs = service_config.collector.runs
        rule = RuleConfig.model_validate({"name": "repair", "scorers": ["tests.e2e.flaky_scorer:flaky"]})
        flaky_scorer.UNREACHABLE.set()
        during = await backfill(service.store, rule, 3600, runs)
        statuses = await asyncio.to_thread(
            service.store.internal_query,
            "SELECT Status, count() FROM scores FINAL WHERE Rule = 'repair' GROUP BY Status",
        )
        assert during["candidates"] == 6 and statuses == [("error", 6)]
        flaky_scorer.UNREACHABLE.clear()
        after = await backfill(service.store, rule, 3600, runs)
        assert after["skipped_already_scored"] == 0 and after["rescored_after_errors"] == 6, after
        statuses = await asyncio.to_thread(
            service.store.internal_query,
            "SELECT Status, count() FROM scores FINAL WHERE Rule = 'repair' GROUP BY Status",
        )
        assert statuses == [("ok", 6)]
        again = await backfill(service.store, rule, 3600, runs)
        assert again["skipped_already_scored"] == 6 and again["scores_written"] == 0
    finally:
        flaky_scorer.UNREACHABLE.clear()
        await service.shutdown()


@pytest.mark.slow
def test_demo_status_and_preview_from_the_cli(tmp_path: Path) -> None:
    config = tmp_path / "spanscore.yaml"
    config.write_text(
        f"collector:\n  grpc: {{port: {_free_port()}}}\n  http: {{port: {_free_port()}}}\n"
        "  runs: {quiet_period_s: 0.5}\n"
        f"api: {{port: {_free_port()}}}\n"
        "scoring: {poll_interval_s: 0.1}\n"
        "rules:\n  - name: cheap-checks\n    scorers: [completeness, keyword_coverage]\n",
        encoding="utf-8",
    )
    process = _start(config)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "spanscore.cli.commands", *args, "-c", str(config)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )

    try:
        sent = cli("demo", "--traces", "9")
        assert sent.returncode == 0, sent.stderr
        deadline = time.monotonic() + 60
        scored = 0
        while time.monotonic() < deadline and scored < 9:
            result = cli("query", "--format", "csv", "SELECT uniqExact(RunId) FROM scores WHERE Rule = 'cheap-checks'")
            scored = int(result.stdout.splitlines()[-1]) if result.returncode == 0 else 0
            time.sleep(0.5)
        assert scored == 9  # three dialects, three conversations each, every one became a scored run
        status = cli("status", "--format", "json")
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["spans_stored"] > 0
        preview = cli("rules", "preview", "cheap-checks", "--since", "24h", "--format", "json")
        assert preview.returncode == 0, preview.stderr
        assert json.loads(preview.stdout)["sampled"] == 9
        unknown = cli("backfill", "nope")
        assert unknown.returncode == 1 and "unknown rule" in unknown.stderr
    finally:
        process.terminate()
        assert process.wait(timeout=60) == 0
