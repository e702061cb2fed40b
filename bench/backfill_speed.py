"""Runs/s of live scoring and of backfill on the same stored runs, side by side.

An embedded store is filled with finished agent runs (one ``invoke_agent`` span each). Live is
timed as the service scores a poll's worth of ready runs: one ``dispatcher.consume`` and the wait for
every score. Backfill is timed end to end (reading the runs back from storage included) with a
second rule holding the same four code scorers. ``per-run`` repeats backfill with one run per
decision insert, as backfill worked before it was chunked, for comparison.

    python -m bench.backfill_speed [--runs 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from spanscore.offline import backfill as backfill_module
from spanscore.offline.backfill import backfill, stored_runs
from spanscore.records import SpanRecord
from spanscore.runs.assembly import run_fingerprint
from spanscore.runs.config import RunsConfig
from spanscore.runs.readiness import ReadyRun
from spanscore.sampling.rules import RuleConfig
from spanscore.scoring.live import LiveScoring
from spanscore.storage.clickhouse import ClickHouseStore

SCORERS = ["completeness", "keyword_coverage", "textual_difference", "tone_consistency"]


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _span(index: int) -> SpanRecord:
    now = time.time_ns() - 60_000_000_000
    return SpanRecord(
        trace_id=os.urandom(16).hex(),
        span_id=os.urandom(8).hex(),
        parent_span_id="",
        name="invoke_agent support",
        kind="Internal",
        start_time_ns=now - 50_000_000,
        end_time_ns=now,
        service_name="bench-backfill",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support",
            "gen_ai.input.messages": _messages("user", f"How do I reset my password? ({index})"),
            "gen_ai.output.messages": _messages("assistant", "Open Settings, then Security, then Reset password."),
        },
    )


def _rule(name: str) -> RuleConfig:
    return RuleConfig.model_validate({"name": name, "sample": 1.0, "scorers": SCORERS})


async def _live(store: ClickHouseStore, runs: RunsConfig) -> float:
    candidates = await asyncio.to_thread(stored_runs, store, 3600, runs)
    live = LiveScoring(store, [_rule("live")], runs=runs)
    await live.start()
    try:
        started = time.perf_counter()
        await live.dispatcher.consume([ReadyRun(run, "max_wait", run_fingerprint(run)) for run in candidates])
        await live.settle()
        return len(candidates) / (time.perf_counter() - started)
    finally:
        await live.shutdown()


async def _backfill(store: ClickHouseStore, runs: RunsConfig, rule: str) -> float:
    started = time.perf_counter()
    result = await backfill(store, _rule(rule), 3600, runs)
    return int(result["candidates"]) / (time.perf_counter() - started)


async def measure(count: int, per_run: bool = True) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as directory:
        store = ClickHouseStore(f"chdb://{Path(directory) / 'store'}", "bench_backfill")
        store.open()
        try:
            store.insert_spans_sync([_span(i) for i in range(count)])
            runs = RunsConfig()
            figures = {"runs": float(count), "live_runs_per_s": await _live(store, runs)}
            figures["backfill_runs_per_s"] = await _backfill(store, runs, "chunked")
            if per_run:
                chunk, backfill_module._CHUNK = backfill_module._CHUNK, 1
                try:
                    figures["per_run_backfill_runs_per_s"] = await _backfill(store, runs, "per_run")
                finally:
                    backfill_module._CHUNK = chunk
            return {key: round(value, 1) for key, value in figures.items()}
        finally:
            store.close()


def run_backfill(plan_mode: str, log: Callable[[str], None]) -> dict[str, float]:
    """The bench.run section: more runs in a full run, a handful in the CI smoke."""
    count = {"smoke": 60, "quick": 400, "full": 2000}[plan_mode]
    figures = asyncio.run(measure(count, per_run=plan_mode != "smoke"))
    live, backfilled = figures["live_runs_per_s"], figures["backfill_runs_per_s"]
    log(f"  {count} runs: live {live:,.0f} runs/s, backfill {backfilled:,.0f} runs/s")
    return figures


def backfill_section(figures: dict[str, float]) -> list[str]:
    """Section 7 of docs/benchmarks.md."""
    per_run = figures.get("per_run_backfill_runs_per_s")
    return [
        "## 7. Live scoring and backfill on the same stored runs",
        "",
        f"{figures['runs']:,.0f} finished runs (one `invoke_agent` span each) in an embedded store, four code scorers",
        "(`bench/backfill_speed.py`). Live: one poll's worth dispatched at once and every score written. Backfill:",
        "end to end, reading the runs back from storage included.",
        "",
        "| path | runs/s |",
        "|---|---:|",
        f"| live scoring | {figures['live_runs_per_s']:,.0f} |",
        f"| backfill (chunked decisions) | {figures['backfill_runs_per_s']:,.0f} |",
        *([f"| backfill, one run per decision insert (before chunking) | {per_run:,.0f} |"] if per_run else []),
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.runs)), indent=2))


if __name__ == "__main__":
    main()
