"""``python -m bench.insert_merge_cost [--rows 300000] [--sizes 5000,20000,50000]``: CPU per row of inserts plus merges.

Each insert has a fixed engine cost, and small parts are merged again and again afterwards (issue #43: 14.3
µs/row with 5k-row inserts, 5.4 with 50k). For each insert size this inserts ``--rows`` small spans into a
fresh embedded store, then waits (bounded) until the engine's background merges have settled, and reports
the process's CPU time (every thread: the inserts and the engine's merge pool) per row, the wall time, and
the parts left. Each size runs in its own process, so one size's merges do not land on another's figure.
Nothing is asserted; the load average is printed beside every figure.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

SETTLE_S = 60.0
"""At most this long after the last insert for merges to settle (quiet for 2 s: no merge running)."""


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def measure(size: int, total: int, table_settings: str = "", interval_s: float = 0.0) -> dict[str, Any]:
    from bench.limits import decoded_rows
    from spanscore.storage.clickhouse import ClickHouseStore

    rows = decoded_rows(size, False)
    with tempfile.TemporaryDirectory(prefix="spanscore-bench-merge-") as workdir:
        store = ClickHouseStore(f"chdb:///{Path(workdir, 'data').as_posix().lstrip('/')}", "spanscore")
        store.open()
        try:
            for table in ("otel_traces", "otel_traces_trace_id_ts") if table_settings else ():
                store.internal_query(f"ALTER TABLE spanscore.{table} MODIFY SETTING {table_settings}")
            load = os.getloadavg()
            cpu, wall = _cpu(), time.perf_counter()
            inserts = 0
            while inserts * size < total:
                store.insert_spans_sync(rows)
                inserts += 1
                if interval_s:  # spaced as a service's inserts are, so merges run between them
                    time.sleep(max(0.0, wall + inserts * interval_s - time.perf_counter()))
            inserted_s = time.perf_counter() - wall
            _settle(store)
            cpu, wall = _cpu() - cpu, time.perf_counter() - wall
            parts = store.internal_query("SELECT count() FROM system.parts WHERE active AND table = 'otel_traces'")
            merged = store.internal_query(
                "SELECT sum(rows) FROM system.parts WHERE NOT active AND table = 'otel_traces'"
            )
        finally:
            store.close()
    stored = inserts * size
    return {"insert_rows": size, "inserts": inserts, "rows": stored, "cpu_us_per_row": cpu / stored * 1e6,
            "wall_s": wall, "insert_wall_s": inserted_s, "parts_left": parts[0][0], "table_settings": table_settings,
            "interval_s": interval_s, "rows_merged": merged[0][0] if merged else None,
            "load_average": " / ".join(f"{v:.2f}" for v in load)}  # fmt: skip


def _settle(store: Any) -> None:
    deadline = time.monotonic() + SETTLE_S
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        running = store.internal_query("SELECT count() FROM system.merges")[0][0]
        if running:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= 2.0:
            return
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=300_000, help="rows inserted per size")
    parser.add_argument("--sizes", default="5000,20000,50000", help="rows per insert, comma-separated")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--interval", type=float, default=0.0, help="seconds from one insert's start to the next's")
    parser.add_argument(
        "--table-settings",
        action="append",
        default=None,
        help="MergeTree settings set on otel_traces and its trace-id table before inserting, e.g. "
        "'merge_selector_base = 20' (repeat for variants, interleaved; '' is the store as shipped)",
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    spawn = multiprocessing.get_context("spawn")
    for _ in range(args.repeat):
        for size in sizes:
            for settings in args.table_settings or [""]:
                with ProcessPoolExecutor(1, mp_context=spawn) as pool:
                    result = pool.submit(measure, size, args.rows, settings, args.interval).result(timeout=600)
                print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
