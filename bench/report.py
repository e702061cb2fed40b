"""Render the suite's raw results as ``docs/benchmarks.md``: figures, conditions, targets, ratios."""

from __future__ import annotations

import statistics
from typing import Any

from bench.backfill_speed import backfill_section
from bench.ingest_growth import growth_section
from bench.query_report import TARGET_MS as TARGET_SERIES_MS
from bench.query_report import query_section

TARGET_SMALL_GRPC = 30_000
TARGET_LLM = 10_000
TARGET_ACK_P99_MS = 50.0
TARGET_FRESHNESS_S = 2.0
SCORING_SLACK_S = 1.0  # run complete -> score queryable: quiet period + this, at p95
PEER_1CPU = 12_000
PEER_2CPU = 24_000


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs) if runs else 0.0


def _spread(runs: list[dict[str, Any]], key: str, fmt: str = "{:,.0f}") -> str:
    if len(runs) < 2:
        return ""
    values = [run[key] for run in runs]
    return f" ({fmt.format(min(values))}-{fmt.format(max(values))})"


def _size(llm: bool) -> str:
    return "LLM (~5.4 KB)" if llm else "small (~140 B)"


def _decode_limit(results: dict[str, Any], llm: bool, batch: int) -> float:
    for entry in results["limits"]["decode"]:
        if entry["llm"] == llm and entry["batch"] == batch:
            return _median(entry["runs"], "spans_per_s")
    return 0.0


def _ack(case: dict[str, Any]) -> str:
    """``storage.acknowledge`` of the case: the insert (default) or the spool's fsync."""
    return "spool fsync" if case.get("acknowledge") == "spooled" else "insert"


def _ingest_rows(results: dict[str, Any]) -> list[str]:
    rows = [
        "| transport | spans | batch | ack after | spans/s, median (min-max) | target | vs target | vs OTel Collector "
        "2 CPU (quoted 24,000) | vs decode limit | ack p50 ms | ack p99 ms | peak RSS MB | service CPU "
        "| stored / acked |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case in results["ingest"]:
        runs = case["runs"]
        rate = _median(runs, "spans_per_s")
        target = 0 if case["transport"] != "grpc" else TARGET_LLM if case["llm"] else TARGET_SMALL_GRPC
        versus = f"{rate / target:.2f}x" if target else "-"
        peer = f"{rate / PEER_2CPU:.2f}x" if case["transport"] == "grpc" and not case["llm"] else "-"
        limit = _decode_limit(results, case["llm"], case["batch"])
        stored_ok = "ok" if case["stored_spans"] == case["acked_spans"] else "**MISMATCH**"
        rows.append(
            f"| {case['transport']} | {_size(case['llm'])} | {case['batch']} | {_ack(case)}"
            f" | {rate:,.0f}{_spread(runs, 'spans_per_s')}"
            f" | {f'>= {target:,}' if target else '-'} | {versus} | {peer}"
            f" | {f'{rate / limit:.2f}x' if limit else '-'}"
            f" | {_median(runs, 'ack_p50_ms'):.1f} | {_median(runs, 'ack_p99_ms'):.1f}"
            f" | {case['peak_rss_bytes'] / 1e6:,.0f} | {case['service_cpu_share']:.2f} cores"
            f" | {case['stored_spans']:,} / {case['acked_spans']:,} {stored_ok} |"
        )
    return rows


def _half_rate_rows(results: dict[str, Any]) -> list[str]:
    rows = [
        "| transport | spans | batch | ack after | offered spans/s (half of sustained) | achieved spans/s "
        "| ack p50 ms | ack p99 ms | target p99 | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case in results["ingest"]:
        half = case["half_rate_runs"]
        if not half:
            continue
        offered = _median(case["runs"], "spans_per_s") / 2
        p99 = _median(half, "ack_p99_ms")
        rows.append(
            f"| {case['transport']} | {_size(case['llm'])} | {case['batch']} | {_ack(case)} | {offered:,.0f}"
            f" | {_median(half, 'spans_per_s'):,.0f} | {_median(half, 'ack_p50_ms'):.1f}"
            f" | {p99:.1f}{_spread(half, 'ack_p99_ms', '{:.1f}')} | <= {TARGET_ACK_P99_MS:.0f}"
            f" | {'meets' if p99 <= TARGET_ACK_P99_MS else 'misses'} |"
        )
    return rows if len(rows) > 2 else []


def _limit_rows(results: dict[str, Any]) -> list[str]:
    rows = ["| stage | spans | rows per call | spans/s, median (min-max) |", "|---|---|---|---|"]
    for entry in results["limits"]["decode"]:
        rows.append(
            f"| decode (`parse_traces` + `spans_from_request`) | {_size(entry['llm'])} | {entry['batch']}"
            f" | {_median(entry['runs'], 'spans_per_s'):,.0f}{_spread(entry['runs'], 'spans_per_s')} |"
        )
    for entry in results["limits"]["insert"]:
        rows.append(
            f"| storage insert (`insert_spans_sync`, embedded chDB) | {_size(entry['llm'])} | {entry['batch']}"
            f" | {_median(entry['runs'], 'spans_per_s'):,.0f}{_spread(entry['runs'], 'spans_per_s')} |"
        )
    return rows


def _freshness_rows(results: dict[str, Any]) -> list[str]:
    fresh = results["freshness"]
    count = len(fresh["latencies_s"])
    verdict = "meets" if fresh["p95_s"] <= TARGET_FRESHNESS_S else "misses"
    warmup = ", ".join(f"{value * 1000:.0f} ms" for value in fresh["warmup_s"]) or "-"
    return [
        "| samples | p50 | p95 | timeouts (> 10 s) | first sample after start (not counted) | target | verdict |",
        "|---|---|---|---|---|---|---|",
        f"| {count} | {fresh['p50_s'] * 1000:.0f} ms | {fresh['p95_s'] * 1000:.0f} ms | {fresh['timeouts']}"
        f" | {warmup} | <= {TARGET_FRESHNESS_S:.0f} s | {verdict} |",
    ]


def _scoring_rows(scoring: dict[str, Any]) -> list[str]:
    p50, p95 = scoring["p50_s"], scoring["p95_s"]
    target = scoring["target_p95_s"]
    verdict = "-" if p95 is None else "meets" if p95 <= target else "misses"
    warmup = ", ".join(f"{value:.2f} s" for value in scoring["warmup_s"]) or "-"
    return [
        "| background offered / achieved spans/s | samples | p50 | p95 | timeouts (> 20 s) "
        "| first run after start (not counted) | target p95 | verdict |",
        "|---|---|---|---|---|---|---|---|",
        f"| {scoring['background_offered_spans_per_s']:,.0f} / {scoring['background_spans_per_s']:,}"
        f" | {scoring['samples']} | {_seconds(p50)} | {_seconds(p95)} | {scoring['timeouts']} | {warmup}"
        f" | <= {target:g} s (quiet period {scoring['quiet_period_s']:g} s + {SCORING_SLACK_S:g} s) | {verdict} |",
    ]


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _scoring_section(results: dict[str, Any]) -> list[str]:
    scoring = results.get("scoring_latency")
    if not scoring:
        return []
    return [
        "## 4. Run complete -> code-scorer score queryable (under background load)",
        "",
        "A fresh service with one rule (`completeness` on service `bench-scored`, sample 1.0), the default",
        f"`collector.runs.quiet_period_s` ({scoring['quiet_period_s']:g} s) and `scoring.poll_interval_s` (0.2 s).",
        f"`storage.acknowledge: {scoring.get('acknowledge', 'stored')}`. A separate process sends background",
        "traffic over gRPC at a paced rate (up to 8 requests in flight): traces of 10 small spans, 100 spans",
        "per request, which the rule filters out but the run assembler and the sampler still handle (one",
        "`filtered_out` decision row per trace). Every 0.5 s the probe sends one finished agent run (a single",
        "`invoke_agent` span with GenAI input and output), without waiting for earlier ones, and polls",
        "`SELECT DISTINCT SpanId FROM scores WHERE SpanId IN (...)` through `POST /api/v1/query` every 50 ms;",
        "the figure runs from the root span's end time to the first score row, over "
        f"{scoring['seconds']:g} s of probing.",
        "",
        *_scoring_rows(scoring),
        "",
    ]


def render(results: dict[str, Any], bounds_text: str) -> str:
    conditions = results["conditions"]
    plan = results["plan"]
    lines = [
        "# Benchmarks",
        "",
        "Generated by `python -m bench.run"
        + (" --quick" if results["mode"] == "quick" else "")
        + (" --quick --smoke" if results["mode"] == "smoke" else "")
        + "`; do not edit by hand, re-run it.",
        "Benchmarks are not tests: nothing here is asserted, and the figures move with the machine.",
        "",
        "## Conditions",
        "",
        *[f"- {key}: {value}" for key, value in conditions.items()],
        f"- each figure: median of {plan['runs']} run(s) of {plan['seconds']:g} s (count-bounded too, at most "
        f"{plan['max_spans']:,} spans per run); (min-max) over the runs where there are several",
        f"- load: a separate process, {plan['concurrency']} threads each keeping one request in flight, sending "
        "pre-encoded ExportTraceServiceRequest bytes (trace ids patched per request, so every row is distinct); "
        "gRPC over one channel with a raw unary call, HTTP/protobuf over one keep-alive connection per thread",
        "- service: `spanscore serve -c <temp config>` in its own process, default settings (embedded chDB store "
        "in a temp dir, group commit up to 20,000 spans or 5 ms, `acknowledge: stored`) except where a row says "
        "'spool fsync' (`acknowledge: spooled`: inserts behind the log at most every 0.25 s), loopback ports, "
        "a fresh service per case",
        "- the load generator and the service share the same cores, so the load generator's CPU is "
        "taken from the service",
        "",
        "**Noise.** Other engineers run tests on this machine at the same time; the load average above was "
        "taken at the start. Treat differences under about 20% between runs as noise.",
        "",
        "## Design targets (docs DESIGN.md) and peer anchor",
        "",
        "| what | target | anchor |",
        "|---|---|---|",
        f"| OTLP gRPC ingest, small spans | >= {TARGET_SMALL_GRPC:,} spans/s | OpenTelemetry Collector (Go): about "
        f"{PEER_1CPU:,}/s on 1 CPU, {PEER_2CPU:,}/s on 2; a quoted figure, **not measured here** |",
        f"| same, LLM-sized spans (~5 KB) | >= {TARGET_LLM:,} spans/s | |",
        f"| export acknowledgement | p99 <= {TARGET_ACK_P99_MS:.0f} ms at half the sustained rate | |",
        f"| span received -> queryable | <= {TARGET_FRESHNESS_S:.0f} s | |",
        f"| run complete -> code-scorer score queryable | p95 <= quiet period + {SCORING_SLACK_S:g} s, while "
        "ingesting 5,000 spans/s | |",
        f"| hourly score series, one scorer, 7 days, 10M scores | p50 <= {TARGET_SERIES_MS:.0f} ms from the roll-up; "
        "the raw-table figure beside it | |",
        "",
        "## 1. OTLP ingest into the embedded store (sustained, as fast as acknowledgements allow)",
        "",
        "Ack latency here is at saturation (closed loop, all threads busy), so it mostly measures queueing;",
        'the target latency is measured in the next table. "service CPU" is the service\'s CPU time divided by',
        'the wall time of the runs (2 = both cores). "stored / acked" compares',
        '`spanscore query -c cfg --format csv "SELECT count() FROM otel_traces"` after the case with every',
        "acknowledged span (warm-up and half-rate runs included).",
        "",
        *_ingest_rows(results),
        "",
    ]
    half = _half_rate_rows(results)
    if half:
        lines += [
            "### Acknowledgement latency at half the sustained rate (gRPC, open-loop pacing)",
            "",
            "Requests are released on a fixed schedule at half the median sustained request rate of the same case;",
            "latency runs from send to acknowledgement (an OK means stored).",
            "",
            *half,
            "",
        ]
    lines += [
        "## 2. Physical limits on this machine (no sockets, one thread, own process)",
        "",
        *_limit_rows(results),
        "",
        "## 3. Span received -> queryable",
        "",
        "One span over gRPC, then `SELECT count() FROM otel_traces WHERE SpanId = ...` through",
        "`POST /api/v1/query` every 50 ms until it counts; the clock starts before the send.",
        "",
        *_freshness_rows(results),
        "",
        *_scoring_section(results),
        *(query_section(results["queries"]) if results.get("queries") else []),
        *(growth_section(results["growth"]) if results.get("growth") else []),
        *(backfill_section(results["backfill"]) if results.get("backfill") else []),
        "## What bounds each figure",
        "",
        bounds_text.strip(),
        "",
        "## How to run",
        "",
        "```sh",
        "python -m bench.run            # full: 3 runs x 10 s per figure, about 25 minutes (10M scores, 10M spans)",
        "python -m bench.run --quick    # 1 run x 3 s per figure, about 5 minutes",
        "python -m bench.run --quick --smoke --out /tmp/b.md   # seconds; what CI runs (tests/bench)",
        "python -m bench.run --only queries   # section 5 alone (10M scores), spliced into docs/benchmarks.md",
        "python -m bench.run --only growth    # section 6 alone (10M spans), spliced into docs/benchmarks.md",
        "python -m bench.run --profile  # also samples the service with py-spy (pip install py-spy; not a dependency)",
        "```",
        "",
    ]
    return "\n".join(lines)
