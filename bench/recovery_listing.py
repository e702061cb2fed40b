"""What a restart's listing of undecided traces costs on the embedded store, beside its first read.

``python -m bench.recovery_listing 1440000`` fills a fresh chDB store with that many traces of 10 spans over the
last 300 s (4,800 traces/s for 1,440,000), 95% of them decided (one ``filtered_out`` row each), the latest 5%
not, and times the anchor (``latest_span_ns``), the listing (``undecided_trace_ids``) and the first wave's first
read (``recent_traces``), twice, with the process's RSS. Bounded by the count; nothing leaves the machine.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time

from spanscore.config import load_config
from spanscore.runs.recovery import StoredSpanSource
from spanscore.storage.clickhouse import ClickHouseStore

SPANS_PER_TRACE = 10
DECIDED_SHARE = 0.95


def _rss_mb() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) // 1024


def _trace_id(offset: int) -> str:
    """SQL for the trace id of span ``number`` (traces counted from ``offset``)."""
    index = f"(intDiv(number, {SPANS_PER_TRACE}) + {offset})"
    return f"lower(hex(cityHash64({index}))) || lower(hex({index} + 1000000000000000))"


def measure(traces: int) -> dict[str, object]:
    config = load_config(None, environ={})
    directory = tempfile.mkdtemp(prefix="spanscore-bench-listing-")
    config.storage.dsn = "chdb://" + directory
    store = ClickHouseStore.from_config(config.storage)
    store.open()
    try:
        now, database = time.time_ns(), store.database
        step = 300_000_000_000 // traces
        store.client.command(
            f"INSERT INTO {database}.otel_traces (Timestamp, TraceId, SpanId, ServiceName, SpanName)"
            f" SELECT fromUnixTimestamp64Nano(toInt64({now} - intDiv(number, {SPANS_PER_TRACE}) * {step})),"
            f" {_trace_id(0)}, lower(hex(number)), 'svc', 'step' FROM numbers({traces * SPANS_PER_TRACE})"
        )
        undecided = traces - int(traces * DECIDED_SHARE)  # the latest ones
        store.client.command(
            f"INSERT INTO {database}.score_decisions (Timestamp, RunTimestamp, TraceId, SpanId, RunId, ServiceName,"
            " AgentName, Rule, Decision, Probability, Reason, ReadyReason, Version)"
            f" SELECT now64(9), now64(9), {_trace_id(undecided)}, 'a', toString(number), 'svc', 'a', 'r',"
            f" 'filtered_out', 0, '', 'quiet_period', 1 FROM numbers({(traces - undecided) * SPANS_PER_TRACE})"
            f" WHERE number % {SPANS_PER_TRACE} = 0"
        )
        source = StoredSpanSource(store)
        since = now - 360_000_000_000
        rounds = []
        for _ in range(2):
            started = time.perf_counter()
            source.latest_span_ns(now)
            anchored = time.perf_counter()
            listed = source.undecided_trace_ids(since)
            listing = time.perf_counter()
            next(iter(source.recent_traces(since)))
            read = time.perf_counter()
            rounds.append(
                {
                    "anchor_ms": round(1000 * (anchored - started), 1),
                    "listed": len(listed),
                    "listing_ms": round(1000 * (listing - anchored)),
                    "first_read_ms": round(1000 * (read - listing)),
                    "rss_mb": _rss_mb(),
                }
            )
        return {"traces": traces, "expected_undecided": undecided, "rounds": rounds}
    finally:
        store.close()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 240_000)))
