"""The "What bounds each figure" section: reasoning from the measured figures, plus profile hot spots.

The numbers quoted here are recomputed from each run's results, so the text
stays true when the figures move; the reasoning (what limits what) is the
part written by hand and should be revisited when the ingest path changes.
"""

from __future__ import annotations

import statistics
from typing import Any


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs) if runs else 0.0


def _limit(results: dict[str, Any], stage: str, llm: bool, rows: int) -> tuple[float, int]:
    """The stage's median rate at the measured call size closest to ``rows``, and that size."""
    entries = [e for e in results["limits"][stage] if e["llm"] == llm]
    if not entries:
        return 0.0, 0
    entry = min(entries, key=lambda e: abs(e["batch"] - rows))
    return _median(entry["runs"], "spans_per_s"), entry["batch"]


def _case(results: dict[str, Any], transport: str, llm: bool, batch: int) -> dict[str, Any] | None:
    for case in results["ingest"]:
        if (case["transport"], case["llm"], case["batch"]) == (transport, llm, batch):
            return case
    return None


def _ingest_paragraph(results: dict[str, Any]) -> list[str]:
    case = _case(results, "grpc", False, 100) or results["ingest"][0]
    rate = _median(case["runs"], "spans_per_s")
    concurrency = results["plan"]["concurrency"]
    decode, _ = _limit(results, "decode", case["llm"], case["batch"])
    # One group commit holds at most what is in flight, so the insert runs at about that size.
    insert, insert_rows = _limit(results, "insert", case["llm"], concurrency * case["batch"])
    serial = 1 / (1 / decode + 1 / insert) if decode and insert else 0.0
    p50_s = _median(case["runs"], "ack_p50_ms") / 1000
    littles = concurrency * case["batch"] / p50_s if p50_s else 0.0
    return [
        f"- **Sustained ingest** ({case['transport']}, {case['batch']} spans per request: {rate:,.0f} spans/s). "
        f"Decode runs on the event loop; the insert runs on the writer thread and, inside chDB, on the engine's "
        f"own threads without the GIL, so the two overlap. The service used {case['service_cpu_share']:.2f} "
        f"cores of 2 (the load generator takes the rest). Decoding alone does {decode:,.0f} spans/s on one core; "
        f"a group commit holds at most the {concurrency} x {case['batch']} spans in flight, and the insert alone "
        f"at {insert_rows:,} rows per call does {insert:,.0f} spans/s; strictly one after the other that would "
        f"be 1/(1/{decode:,.0f} + 1/{insert:,.0f}) = {serial:,.0f} spans/s. With acknowledge-after-insert an "
        f"exporter waits for the group commit, so {concurrency} requests in flight give at most "
        f"{concurrency} x {case['batch']} spans per ack latency ({p50_s * 1000:.0f} ms p50) = {littles:,.0f} "
        f"spans/s (Little's law): small requests are bounded by latency, that is by the fixed cost of each "
        f"insert (below). `storage.acknowledge: spooled` takes the insert out of the ack (rows marked "
        f"'spool fsync').",
        "- **Small vs LLM-sized spans.** LLM-sized spans cost more per span in decode (5 KB of attribute "
        "text to copy into `str`) and much more in the insert (bytes to compress and write), so their "
        "ceiling is the insert rate; small spans are bounded by per-span Python work (upb field access and "
        "object creation in `spans_from_request`, about 7 us per small span on a quiet core since each field "
        "is read once and the record built positionally; 13 us before).",
        "- **Batches of 1000 vs 100.** Bigger requests amortise per-request cost but a request of 1000 LLM "
        "spans is ~5 MB and its acknowledgement waits for a whole group insert, so latency grows with the "
        "batch; with a fixed number of in-flight requests throughput can fall.",
        "- **HTTP vs gRPC.** Same decode and storage path; the receivers differ only in framing (aiohttp vs "
        "grpc.aio), which is small next to decode + insert.",
    ]


def _storage_paragraph(results: dict[str, Any]) -> list[str]:
    drops = []
    for case in results["ingest"]:
        rates = [run["spans_per_s"] for run in case["runs"]]
        if len(rates) > 1 and rates[0] > 0:
            drops.append(rates[-1] / rates[0])
    lines = [
        "- **The storage insert has a large fixed cost.** `insert_spans_sync` serialises the batch to JSON "
        "with orjson (C, about 4 us per small span) and inserts it into the `otel_traces_intake` Null table; a "
        "materialized view maps it into `otel_traces` (migration 0005). The engine parses and writes in its own "
        "threads. Before this, clickhouse-connect built the Native payload in Python (about 20 us per span) and "
        "that was the largest share of the profile. What remains is mostly fixed per insert: 20-30 ms of CPU "
        "in chDB whether the call carries 10 or 1,000 rows. Measured apart (30 inserts of 10 rows each): a "
        "3-column MergeTree table takes 6 ms, the same table layout as `otel_traces` without its views 12-15 "
        "ms (the skip indexes and codecs change little; the many columns, maps and nested arrays are the "
        "cost), the trace-id view adds about 8 ms and the intake view about 5 ms. Rows per call therefore "
        "matter more than anything: compare 1,000 and 10,000 rows per call in the limits table. With "
        "`acknowledge: spooled` the inserts behind the log are spaced `storage.insert_interval_s` (0.25 s) "
        "apart so that fixed cost is paid a few times a second, not per batch, and they send the JSON "
        "already written to the log instead of encoding the spans again.",
    ]
    if drops:
        lines.append(
            f"- **Runs against one service slow down.** The last run of a case reached a median "
            f"{statistics.median(drops):.0%} of the first run's rate (range {min(drops):.0%}-{max(drops):.0%}). "
            "Part of that is machine noise; part may be the growing store (background merges of many small "
            "parts compete for the same 2 cores) and the run assembler's growing state. Not isolated yet."
        )
    return lines


def _latency_paragraph(results: dict[str, Any]) -> list[str]:
    fresh = results["freshness"]
    insert, rows = _limit(results, "insert", False, 1000)
    insert_ms = rows / insert * 1000 if insert else 0.0
    return [
        "- **Acknowledgement latency at half rate.** With `storage.acknowledge: stored` (the default) an OK "
        "means stored, so every export waits for the group commit: up to `storage.flush_interval_s` (5 ms) for "
        f"the batch to close, plus the insert itself ({rows:,} small rows take about {insert_ms:.0f} ms at the "
        "measured insert rate, most of it the fixed per-insert cost), plus any insert already running. A p99 "
        "of 50 ms is out of reach that way by construction. With `storage.acknowledge: spooled` an OK waits "
        "for one fsync of the batch in the spool (a write-ahead log), and inserts run behind it, merging "
        "waiting batches up to `storage.batch_max_spans`. What is left in its p99 is the GIL: a request "
        "waits while the event loop decodes the requests ahead of it (about 7 us per small span, so a "
        "1,000-span request holds the loop for 7 ms or more), while the spool thread encodes JSON, and "
        "during full garbage collections (since commit 8e80908 the service freezes what start-up left "
        "alive; at half rate with 1,000-span requests the longest full collection fell from 107 to 41 ms "
        "and the p99 from 191 to 97 ms).",
        f"- **Received -> queryable** (p50 {fresh['p50_s'] * 1000:.0f} ms): the acknowledgement already "
        "means stored, so this is ack latency + one poll interval (50 ms) + the query round trip through "
        "the API's reader thread; chDB makes inserted parts visible at once (no async insert).",
        "- **Peak RSS.** The embedded ClickHouse engine starts at roughly 350 MB before any span arrives; "
        "on top come the requests in flight (decoded protobuf + rows) and the run assembler's open runs.",
    ]


def _profile_lines(profile: dict[str, Any] | None) -> list[str]:
    if not profile:
        return [
            "### Hot spots",
            "",
            "Not sampled in this run: `pip install py-spy` and run `python -m bench.run --profile` "
            "(py-spy attaches to the service by pid, so it needs ptrace rights).",
        ]
    lines = [
        "### Hot spots of the service during gRPC ingest (py-spy, 100 Hz)",
        "",
        f"Small spans, 100 per request, {profile['seconds']:g} s at {profile['spans_per_s']:,.0f} spans/s "
        "(slower than unprofiled: sampling costs). Shares are of all samples of non-idle threads. py-spy sees "
        "Python frames only: time inside the chDB engine shows as `Connection.query`.",
        "",
        "| # | self time (leaf function) | share |",
        "|---|---|---|",
    ]
    lines += [f"| {i} | `{name}` | {share:.0%} |" for i, (name, share) in enumerate(profile["self"], 1)]
    lines += ["", "| # | inclusive time (spanscore function) | share |", "|---|---|---|"]
    lines += [f"| {i} | `{name}` | {share:.0%} |" for i, (name, share) in enumerate(profile["inclusive"], 1)]
    return lines


def bounds_text(results: dict[str, Any]) -> str:
    lines = [
        *_ingest_paragraph(results),
        *_storage_paragraph(results),
        *_latency_paragraph(results),
        "",
        *_profile_lines(results.get("profile")),
    ]
    return "\n".join(lines)
