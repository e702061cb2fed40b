"""The benchmark matrix: which cases run, for how long, how often, and their raw results.

``Plan`` holds the sizes for a full, ``--quick`` or ``--smoke`` run. Every case
starts a fresh ``spanscore serve`` and drives it from a separate load process.
Results are plain dicts so the report and the smoke test can read them.
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.freshness import received_to_queryable
from bench.ingest_growth import ingest_growth
from bench.limits import decode_rate, insert_rate
from bench.load import LoadSpec, load_summary, percentile, run_load
from bench.queries import query_benchmark
from bench.scoring_latency import measure as measure_scoring_latency
from bench.service import ServiceProcess, temp_workdir


@dataclass(slots=True)
class Plan:
    seconds: float
    runs: int
    max_spans: int
    cases: list[tuple[str, bool, int]]  # (transport, llm, spans per request)
    insert_sizes: list[int]
    freshness_samples: int
    spooled_cases: list[tuple[str, bool, int]] = field(default_factory=list)  # again with acknowledge: spooled
    concurrency: int = 8
    half_rate: bool = True
    settle_s: float = 0.0
    """Before the half-rate runs, wait (at most this long) until the service has worked off what the sustained
    runs left: its CPU below ``IDLE_CORES`` for two seconds in a row. 0: start them at once, as before."""
    scoring_seconds: float = 30.0  # how long run complete -> score queryable is probed
    scoring_spans_per_second: float = 5000.0  # background load meanwhile (the condition)
    query_sizes: tuple[int, ...] = (1_000_000, 2_000_000, 5_000_000, 10_000_000)  # scores in the store, in steps
    query_runs: int = 15  # timed runs per query and size
    growth_sizes: tuple[int, ...] = (1_000_000, 2_000_000, 5_000_000, 10_000_000)  # seeded spans, in steps

    @classmethod
    def make(cls, quick: bool, smoke: bool) -> Plan:
        if smoke:
            return cls(
                seconds=1.0,
                runs=1,
                max_spans=20_000,
                cases=[("grpc", False, 100), ("http", False, 100)],
                spooled_cases=[("grpc", False, 100)],
                insert_sizes=[1000],
                freshness_samples=3,
                concurrency=4,
                half_rate=False,
                scoring_seconds=3.0,
                scoring_spans_per_second=500.0,
                query_sizes=(20_000, 50_000),
                query_runs=3,
                growth_sizes=(20_000, 40_000),
            )
        cases = [(t, llm, n) for t in ("grpc", "http") for llm in (False, True) for n in (100, 1000)]
        spooled = [("grpc", False, 100), ("grpc", False, 1000), ("grpc", True, 1000)]
        if quick:
            return cls(
                seconds=3.0,
                runs=1,
                max_spans=500_000,
                cases=cases,
                spooled_cases=spooled,
                insert_sizes=[1000, 10_000],
                freshness_samples=10,
                scoring_seconds=15.0,
                query_sizes=(100_000, 1_000_000),
                query_runs=7,
                growth_sizes=(200_000, 2_000_000),
            )
        return cls(
            seconds=10.0,
            runs=3,
            max_spans=2_000_000,
            cases=cases,
            spooled_cases=spooled,
            insert_sizes=[1000, 10_000],
            freshness_samples=30,
        )


def _pool() -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))


def run_ingest_case(
    plan: Plan,
    transport: str,
    llm: bool,
    batch: int,
    log: Callable[[str], None],
    acknowledge: str = "stored",
    *,
    config: dict[str, object] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Sustained runs (then paced half-rate runs over gRPC) against one fresh service.

    ``acknowledge`` is the service's ``storage.acknowledge``: after the insert, or once spooled. ``config`` is
    merged over the service's config (e.g. its ``rules``), ``env`` into its environment.
    """
    case: dict[str, Any] = {
        "transport": transport, "llm": llm, "batch": batch, "acknowledge": acknowledge, "runs": [],
        "half_rate_runs": [],
    }  # fmt: skip
    extra: dict[str, object] = dict(config or {})
    storage = extra.get("storage")
    extra["storage"] = {**(storage if isinstance(storage, dict) else {}), "acknowledge": acknowledge}
    with (
        temp_workdir(f"{transport}-{batch}") as workdir,
        ServiceProcess(Path(workdir), extra, env=env) as service,
        _pool() as pool,
    ):
        case["service_start_s"] = service.start_seconds
        port = service.grpc_port if transport == "grpc" else service.http_port
        sequence = 0
        total_acked = 0
        cpu_before = service.cpu_seconds()
        for _ in range(plan.runs):
            spec = LoadSpec(
                transport,
                port,
                batch,
                llm,
                plan.seconds,
                max(1, plan.max_spans // batch),
                concurrency=plan.concurrency,
                sequence_base=sequence,
            )
            result = load_summary(pool.submit(run_load, asdict(spec)).result())
            sequence = result["next_sequence"]
            total_acked += result["total_acked_spans"]
            case["runs"].append(result)
            log(
                f"  {transport} {'llm' if llm else 'small'} x{batch} ack={acknowledge}: "
                f"{result['spans_per_s']:,.0f} spans/s "
                f"p50 {result['ack_p50_ms']:.1f} ms p99 {result['ack_p99_ms']:.1f} ms "
                f"failed {result['failed_requests']}"
            )
        busy_s = sum(run["elapsed_s"] for run in case["runs"])
        case["service_cpu_share"] = (service.cpu_seconds() - cpu_before) / busy_s if busy_s else 0.0
        sustained = statistics.median(run["requests_per_s"] for run in case["runs"])
        if plan.half_rate and transport == "grpc" and sustained > 0:
            if plan.settle_s > 0:
                case["half_rate_settle_s"] = settle(service, plan.settle_s)
                log(f"  settled in {case['half_rate_settle_s']:.1f} s")
            for _ in range(plan.runs):
                spec = LoadSpec(
                    transport,
                    port,
                    batch,
                    llm,
                    plan.seconds,
                    max(1, plan.max_spans // batch),
                    concurrency=plan.concurrency,
                    rate=sustained / 2,
                    sequence_base=sequence,
                )
                result = load_summary(pool.submit(run_load, asdict(spec)).result())
                sequence = result["next_sequence"]
                total_acked += result["total_acked_spans"]
                case["half_rate_runs"].append(result)
                log(
                    f"  half rate {result['spans_per_s']:,.0f} spans/s: p50 {result['ack_p50_ms']:.1f} ms "
                    f"p99 {result['ack_p99_ms']:.1f} ms"
                )
        case["peak_rss_bytes"] = service.peak_rss_bytes()
        case["acked_spans"] = total_acked
        case["stored_spans"] = service.stored_spans_cli()
        if extra.get("rules"):
            case["decisions"] = decided_traces(service)
    return case


IDLE_CORES = 0.25
"""A service using less than this share of a core is taken to have worked off its backlog."""


def settle(service: ServiceProcess, within_s: float) -> float:
    """Seconds until the service's CPU stayed under ``IDLE_CORES`` for two one-second samples, at most ``within_s``.

    A run at half the sustained rate measures a service at half its capacity only once the sustained runs' backlog
    (run assembly's queue, the spool, readiness, merges) is worked off; started at once, it measures that recovery.
    """
    started = time.monotonic()
    quiet = 0
    while quiet < 2 and time.monotonic() - started < within_s:
        before = service.cpu_seconds()
        time.sleep(1.0)
        quiet = quiet + 1 if service.cpu_seconds() - before < IDLE_CORES else 0
    return time.monotonic() - started


def decided_traces(service: ServiceProcess, settle_s: float = 30.0) -> dict[str, Any]:
    """Whether every stored trace's run got a decision from the rule (#43: none dropped at the assembler's bounds).

    Read from the service's own counters (``/metrics``), not from ``score_decisions``: the bench's template
    repeats its child span ids across requests (only trace ids and root ids change), and until session 28 its
    root ids too, so that table's rows, keyed by run id, folded into one another as they merged. Waits until
    every stored trace's run was handed on, or the counters stood still for ``STILL_SAMPLES`` looks in a row, at
    most ``settle_s``. The bench's traces hold one run each. Two equal looks 2.5 s apart were not enough: with
    every run built in full (the default rule) readiness handed runs on in bursts, ``runs_ready`` stood still
    for about 6 s while 33,000-47,000 traces waited, and the count stopped at 2,700 short (session 28).
    """
    counts: dict[str, float] = {}
    still, traces = 0, 0
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline:
        time.sleep(2.5)
        now = _counters(service)
        traces = _stored_traces(service)
        still = still + 1 if now == counts else 0
        counts = now
        if counts.get("runs_ready", 0) >= traces or still >= STILL_SAMPLES:
            break
    traces = _stored_traces(service)
    return {
        "traces": traces,
        "decided": int(counts.get("runs_ready", 0)),
        "evicted_traces": int(counts.get("runs_evicted_traces", 0)),
        "by_decision": {
            name.partition('decision="')[2].rstrip('"}'): int(value)
            for name, value in counts.items()
            if name.startswith("decisions_written{")
        },
    }


STILL_SAMPLES = 4
"""Looks 2.5 s apart with nothing handed on before ``decided_traces`` stops waiting: 10 s, over 2 s quiet period."""


def _stored_traces(service: ServiceProcess) -> int:
    return int(str(service.query("SELECT uniqExact(TraceId) AS n FROM otel_traces")[0]["n"]))


def _counters(service: ServiceProcess) -> dict[str, float]:
    """The service's run and decision counters from ``/metrics``, without the ``spanscore_`` prefix."""
    with urllib.request.urlopen(f"http://127.0.0.1:{service.api_port}/metrics", timeout=30) as response:
        text = response.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        name = name.removeprefix("spanscore_").replace("_total", "", 1)
        if name.startswith(("runs_ready", "runs_evicted_traces", "decisions_written")):
            out[name] = float(value)
    return out


def run_limits(plan: Plan, log: Callable[[str], None]) -> dict[str, Any]:
    seconds = min(plan.seconds, 5.0)
    out: dict[str, Any] = {"decode": [], "insert": []}
    with _pool() as pool:
        for llm in (False, True):
            for batch in sorted({n for _, _, n in plan.cases}):
                runs = [pool.submit(decode_rate, batch, llm, seconds, 1_000_000).result() for _ in range(plan.runs)]
                out["decode"].append({"llm": llm, "batch": batch, "runs": runs})
                log(
                    f"  decode {'llm' if llm else 'small'} x{batch}: "
                    f"{statistics.median(r['spans_per_s'] for r in runs):,.0f} spans/s"
                )
            for size in plan.insert_sizes:
                runs = [pool.submit(insert_rate, size, llm, seconds, 10_000).result() for _ in range(plan.runs)]
                out["insert"].append({"llm": llm, "batch": size, "runs": runs})
                log(
                    f"  insert {'llm' if llm else 'small'} x{size}: "
                    f"{statistics.median(r['spans_per_s'] for r in runs):,.0f} spans/s"
                )
    return out


def run_freshness(plan: Plan, log: Callable[[str], None]) -> dict[str, Any]:
    with temp_workdir("freshness") as workdir, ServiceProcess(Path(workdir)) as service:
        warmup = received_to_queryable(service, 1, 20.0)
        result = received_to_queryable(service, plan.freshness_samples, plan.freshness_samples * 2.0 + 10)
    result["warmup_s"] = warmup["latencies_s"]
    result["p50_s"] = percentile(result["latencies_s"], 0.50)
    result["p95_s"] = percentile(result["latencies_s"], 0.95)
    log(f"  received->queryable p50 {result['p50_s'] * 1000:.0f} ms p95 {result['p95_s'] * 1000:.0f} ms")
    return result


def run_scoring_latency(plan: Plan, log: Callable[[str], None]) -> dict[str, Any]:
    """Run complete -> code-scorer score queryable under paced background load (``bench.scoring_latency``)."""
    result = measure_scoring_latency(plan.scoring_seconds, plan.scoring_spans_per_second)
    p50, p95 = result["p50_s"], result["p95_s"]
    figures = f"p50 {p50:.2f} s p95 {p95:.2f} s" if isinstance(p50, float) and isinstance(p95, float) else "no sample"
    log(
        f"  {figures} over {result['samples']} runs ({result['timeouts']} timeouts), background "
        f"{result['background_spans_per_s']:,} spans/s"
    )
    return result


def run_growth(plan: Plan, log: Callable[[str], None]) -> dict[str, Any]:
    """Ingest throughput, memory and a trace lookup as the span store grows (``bench.ingest_growth``)."""
    with _pool() as pool:
        result: dict[str, Any] = pool.submit(ingest_growth, list(plan.growth_sizes), plan.seconds, plan.runs).result()
    for step in result["steps"]:
        rate = statistics.median(run["spans_per_s"] for run in step["runs"])
        log(
            f"  {step['seeded_spans']:,} seeded: {rate:,.0f} spans/s, peak RSS "
            f"{step['peak_rss_bytes'] / 2**20:,.0f} MB, lookup {step['lookup_ms']:.1f} ms"
        )
    return result


def run_queries(plan: Plan, log: Callable[[str], None]) -> dict[str, Any]:
    """The hourly score series from the roll-up and from raw rows as the store grows (``bench.queries``)."""
    with _pool() as pool:
        result: dict[str, Any] = pool.submit(query_benchmark, list(plan.query_sizes), plan.query_runs).result()
    for step in [*result["steps"], result["merged"]]:
        figures = ", ".join(f"{name} {query['p50_ms'] or 0:.0f} ms" for name, query in step["queries"].items())
        log(f"  {step['scores']:,} scores: {figures}; roll-up == raw: {step['agree']}")
    return result
