"""Cost growth on the ingest side: throughput, memory and a trace lookup as the span store grows 1x -> 10x.

The store is filled by ClickHouse itself (``INSERT INTO otel_traces SELECT ... FROM numbers(N)``, through the
trace-id view like live inserts) with small spans in traces of 10, spread over the 7 days that end 2 days before
the run, so the service's start-up recovery (which looks back minutes) does not load them. At each size a fresh
``spanscore serve`` on that store takes ``runs`` timed runs of gRPC ingest (small spans, 1,000 per request, 8 in
flight, acknowledged after the insert: the default) and the figures are read: spans/s, ack p50/p99, the service's
peak RSS, the store's bytes and parts, and the median time of a trace lookup by id through the query API.

    python -m bench.ingest_growth [--sizes 1000000,2000000,5000000,10000000] [--seconds 10] [--runs 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.load import LoadSpec, load_summary, run_load
from bench.service import ServiceProcess
from spanscore.storage.clickhouse import ClickHouseStore

DATABASE = "spanscore"
TRACE_SIZE = 10
SEED_CHUNK = 2_000_000
"""Rows per seeding statement, so the engine's memory stays modest."""
LOOKUP_RUNS = 15


def seed_sql(offset: int, count: int, start_ns: int, span_ns: int) -> str:
    """Spans numbered ``offset`` .. ``offset + count``, evenly spread over ``span_ns`` from ``start_ns``."""
    total = offset + count
    return f"""
INSERT INTO {DATABASE}.otel_traces (Timestamp, TraceId, SpanId, ParentSpanId, SpanName, SpanKind, ServiceName,
    ResourceAttributes, ScopeName, SpanAttributes, Duration, StatusCode)
SELECT
    fromUnixTimestamp64Nano(toInt64({start_ns} + intDiv(number * {span_ns}, {max(total, 1)}))),
    lower(hex(MD5(toString(intDiv(number, {TRACE_SIZE}))))),
    substring(lower(hex(MD5(toString(number)))), 1, 16),
    if(number % {TRACE_SIZE} = 0, '', substring(lower(hex(MD5(toString(number - number % {TRACE_SIZE})))), 1, 16)),
    concat('step-', toString(number % {TRACE_SIZE})),
    'Internal',
    concat('seed-service-', toString(intDiv(number, {TRACE_SIZE}) % 8)),
    map('service.name', concat('seed-service-', toString(intDiv(number, {TRACE_SIZE}) % 8)), 'host.name', 'bench'),
    'bench',
    map('http.method', 'GET', 'http.status_code', '200', 'component', 'bench'),
    1000000 + number % 1000,
    'Unset'
FROM numbers({offset}, {count})
"""


def _seed(data_dir: Path, seeded: int, size: int, start_ns: int, span_ns: int) -> float:
    """Fill the closed store from ``seeded`` to ``size`` spans; returns the seconds it took."""
    store = ClickHouseStore(f"chdb://{data_dir.as_posix()}", DATABASE)
    store.open()
    started = time.perf_counter()
    try:
        for offset in range(seeded, size, SEED_CHUNK):
            store.client.command(seed_sql(offset, min(SEED_CHUNK, size - offset), start_ns, span_ns))
    finally:
        store.close()
    return time.perf_counter() - started


def _store_figures(data_dir: Path) -> dict[str, int]:
    """Rows, bytes and parts of ``otel_traces``, read from the closed store: the query API answers only
    about spanscore's own tables, and ``system.parts`` is not one of them."""
    store = ClickHouseStore(f"chdb://{data_dir.as_posix()}", DATABASE)
    store.open()
    try:
        [(rows, size, parts)] = store.internal_query(
            "SELECT sum(rows), sum(bytes_on_disk), count() FROM system.parts"
            " WHERE database = {database:String} AND table = 'otel_traces' AND active",
            {"database": DATABASE},
        )
    finally:
        store.close()
    return {"rows": int(rows), "bytes": int(size), "parts": int(parts)}


def _lookup(service: ServiceProcess, traces: int) -> tuple[float, bool]:
    """Median time of fetching one seeded trace by id (the lookup table narrows the time range), and
    whether every fetched trace had all its spans (a lookup that finds nothing would time nothing)."""
    sql = (
        "WITH (SELECT (min(Start), max(End)) FROM otel_traces_trace_id_ts WHERE TraceId = '{id}') AS range "
        "SELECT count() AS n FROM otel_traces WHERE TraceId = '{id}' "
        "AND Timestamp >= range.1 AND Timestamp <= range.2 + 1"
    )
    timings, complete = [], True
    for run in range(LOOKUP_RUNS):
        trace_id = hashlib.md5(str((traces // 2 + run * 7919) % traces).encode()).hexdigest()
        started = time.perf_counter()
        rows = service.query(sql.replace("{id}", trace_id))
        timings.append((time.perf_counter() - started) * 1000)
        complete = complete and int(str(rows[0]["n"])) == TRACE_SIZE
    return statistics.median(timings), complete


def _timed_runs(service: ServiceProcess, seconds: float, runs: int, sequence: int) -> tuple[list[dict[str, Any]], int]:
    results = []
    for _ in range(runs):
        spec = LoadSpec("grpc", service.grpc_port, 1000, False, seconds, 2_000, sequence_base=sequence)
        result = load_summary(run_load(asdict(spec)))
        sequence = int(result["next_sequence"])
        results.append(result)
    return results, sequence


def ingest_growth(sizes: list[int], seconds: float, runs: int) -> dict[str, Any]:
    """Seed each size in turn and measure a fresh service on the store."""
    steps: list[dict[str, Any]] = []
    now = time.time_ns()
    span_ns = 7 * 86_400 * 10**9
    start_ns = now - 2 * 86_400 * 10**9 - span_ns
    with tempfile.TemporaryDirectory(prefix="spanscore-bench-growth-") as workdir:
        root = Path(workdir)
        data_dir = (root / "data").resolve()
        seeded, sequence = 0, 0
        for size in sorted(sizes):
            seed_s = _seed(data_dir, seeded, size, start_ns, span_ns)
            seeded = size
            print(f"  seeded {size:,} spans ({seed_s:.0f} s for this step), measuring", file=sys.stderr, flush=True)
            service = ServiceProcess(root, {"storage": {"dsn": f"chdb://{data_dir.as_posix()}"}})
            with service:
                timed, sequence = _timed_runs(service, seconds, runs, sequence)
                step: dict[str, Any] = {
                    "seeded_spans": size,
                    "seed_s": seed_s,
                    "runs": timed,
                    "service_start_s": service.start_seconds,
                    "peak_rss_bytes": service.peak_rss_bytes(),
                }
                step["lookup_ms"], step["lookup_found"] = _lookup(service, size // TRACE_SIZE)
            step["store"] = _store_figures(data_dir)
            rates = [run["spans_per_s"] for run in timed]
            print(
                f"  {size:,}: {statistics.median(rates):,.0f} spans/s, peak RSS "
                f"{step['peak_rss_bytes'] / 2**20:,.0f} MB, lookup {step['lookup_ms']:.0f} ms",
                file=sys.stderr,
                flush=True,
            )
            steps.append(step)
    return {"seconds": seconds, "runs": runs, "steps": steps}


def growth_rows(growth: dict[str, Any]) -> list[str]:
    """The markdown table of ``ingest_growth`` results, each figure also as a multiple of the first step."""
    steps = growth["steps"]
    if not steps:
        return []

    def median(step: dict[str, Any], key: str) -> float:
        return float(statistics.median(run[key] for run in step["runs"]))

    first = steps[0]
    base_rate, base_rss, base_lookup = median(first, "spans_per_s"), first["peak_rss_bytes"], first["lookup_ms"]
    base_bytes = first["store"]["bytes"] or 1
    lines = [
        "| spans in the store | data | store on disk MB (parts) | x | gRPC small x1000 spans/s | x | ack p50 / p99 ms "
        "| peak RSS MB | x | trace lookup by id, p50 ms | x |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for step in steps:
        rate = median(step, "spans_per_s")
        lines.append(
            f"| {step['store']['rows']:,} | {step['seeded_spans'] / first['seeded_spans']:.0f}x "
            f"| {step['store']['bytes'] / 2**20:,.1f} ({step['store']['parts']}) "
            f"| {step['store']['bytes'] / base_bytes:.1f}x | {rate:,.0f} | {rate / base_rate:.2f}x "
            f"| {median(step, 'ack_p50_ms'):.0f} / {median(step, 'ack_p99_ms'):.0f} "
            f"| {step['peak_rss_bytes'] / 2**20:,.0f} | {step['peak_rss_bytes'] / base_rss:.2f}x "
            f"| {step['lookup_ms']:.1f} | {step['lookup_ms'] / base_lookup:.1f}x |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,2000000,5000000,10000000")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = ingest_growth([int(size) for size in args.sizes.split(",")], args.seconds, args.runs)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    print("\n".join(growth_rows(result)))


if __name__ == "__main__":
    main()


GROWTH_HEADING = "## 6. Ingest as the span store grows (1x -> 10x data)"


def growth_section(growth: dict[str, Any], conditions: dict[str, str] | None = None) -> list[str]:
    """Section 6 of docs/benchmarks.md."""
    steps = growth["steps"]
    lines = [
        GROWTH_HEADING,
        "",
        "The span store is filled by the engine (`INSERT INTO otel_traces SELECT ... FROM numbers(N)`, see "
        "`bench/ingest_growth.py`): small spans in traces of 10 over 8 services, spread over the 7 days that end",
        "2 days before the run (older than start-up recovery looks). At each size a fresh `spanscore serve` on",
        f"that store takes {growth['runs']} run(s) of {growth['seconds']:g} s of gRPC ingest (small spans, 1,000 per "
        "request, 8 in flight, `acknowledge: stored`); the spans it ingests stay in the store for the next size.",
        '"trace lookup" fetches one seeded trace by id through the query API (the time range from',
        "`otel_traces_trace_id_ts`, then `otel_traces`), median of 15 different traces.",
        "",
    ]
    if conditions:
        lines += [
            "Measured apart from the rest of this report: "
            + "; ".join(f"{key} {value}" for key, value in conditions.items())
            + ".",
            "",
        ]
    lines += growth_rows(growth)
    if len(steps) > 1:
        first, last = steps[0], steps[-1]
        rate = [statistics.median(run["spans_per_s"] for run in step["runs"]) for step in (first, last)]
        lines += [
            "",
            f"Reading: from {first['seeded_spans']:,} to {last['seeded_spans']:,} seeded spans "
            f"({last['seeded_spans'] / first['seeded_spans']:.0f}x), ingest went from {rate[0]:,.0f} to "
            f"{rate[1]:,.0f} spans/s ({rate[1] / rate[0]:.2f}x), the service's peak RSS from "
            f"{first['peak_rss_bytes'] / 2**20:,.0f} to {last['peak_rss_bytes'] / 2**20:,.0f} MB, and a trace "
            f"lookup from {first['lookup_ms']:.1f} to {last['lookup_ms']:.1f} ms. New spans go into new parts, "
            "so the insert does not read what is stored; what grows with the store is background merging "
            "(competing for the same 2 cores) and the engine's per-part metadata. Each size is measured right "
            "after its seeding insert, so the engine is still merging those parts during the runs: part of "
            "any drop is that, not the size itself.",
        ]
    return [*lines, ""]
