"""``python -m bench.spool_append [--batches 400] [--threads 2] [--rounds 3]``: durable-append latency per spool.

The acknowledgement under ``storage.acknowledge: spooled`` waits for one durable append. This times that
append alone, for the file-per-batch ``Spool`` (new file, fsync, rename, directory fsync) and the append-only
``SpoolLog`` (one framed record, group-committed ``fdatasync``), alternating them round by round in the same
minutes: ``--threads`` threads each append ``--batches`` batches of 1,000 small spans (the bench's template,
JSON-encoded as the span writer's spool does), paced at ``--rate`` batches per second in all. It prints
p50 / p99 / max in ms per spool and round, the load average beside each. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.limits import decoded_rows
from spanscore.storage.write.paths import SPAN_SPOOL_CODEC
from spanscore.storage.write.spool import Spool
from spanscore.storage.write.spool_log import SpoolLog


def _round(kind: str, batch: list[Any], batches: int, threads: int, rate: float) -> dict[str, Any]:
    latencies: list[float] = []
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="spanscore-bench-spool-", dir=os.environ.get("SPOOL_BENCH_DIR")) as work:
        spool: Any = (SpoolLog if kind == "log" else Spool)(Path(work), 1 << 40, SPAN_SPOOL_CODEC)
        interval = threads / rate
        load = " / ".join(f"{value:.2f}" for value in os.getloadavg())

        def run(offset: float) -> None:
            due = time.monotonic() + offset
            for _ in range(batches):
                time.sleep(max(0.0, due - time.monotonic()))
                started = time.perf_counter()
                spool.append(batch)
                with lock:
                    latencies.append((time.perf_counter() - started) * 1000)
                due += interval

        workers = [threading.Thread(target=run, args=(n * interval / threads,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(600)
        spool.close()
    ordered = sorted(latencies)
    p99 = ordered[int(0.99 * (len(ordered) - 1))]
    return {
        "spool": kind, "load_average": load, "appends": len(ordered), "p50_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(p99, 2), "max_ms": round(ordered[-1], 2),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=400, help="appends per thread and round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rate", type=float, default=50.0, help="batches per second, all threads together")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    batch = decoded_rows(1000, False)
    for _ in range(args.rounds):
        for kind in ("files", "log"):
            print(json.dumps(_round(kind, batch, args.batches, args.threads, args.rate)), flush=True)


if __name__ == "__main__":
    main()
