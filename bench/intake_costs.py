"""``python -m bench.intake_costs [--rows 200000] [--sizes 5000,50000] [--llm] [--variants a,b] [--repeat 1]``.

What the span intake's tables, views and skip indexes cost in the engine (#43), variant against variant, on
the same rows: ``--rows`` spans of the bench's template (``--llm``: about 5 KB each) inserted ``size`` rows at
a time into a fresh embedded store, then the engine's background merges waited out (bounded). Reported per
row: the process's CPU during the inserts, during the merges after them, and in all; and per insert, the fixed
cost (CPU of 200 one-row inserts, divided). The bodies are built before the clock starts, so only the engine is
measured. Each case runs in its own process, so one case's merges never land on another's figure. Nothing is
asserted; the load average is printed beside every figure.

Variants:

- ``intake``: as shipped: JSON rows into the Null table ``otel_traces_intake``, its view into ``otel_traces``;
- ``direct``: the same rows already in ``otel_traces``'s own layout, inserted into it (no Null table, no view);
- ``no_value_indexes``: ``intake`` without the bloom filters over every attribute value
  (``idx_span_attr_value``, ``idx_res_attr_value``);
- ``no_skip_indexes``: ``intake`` without any skip index on ``otel_traces`` (what all of them cost together);
- ``no_trace_id_view``: ``intake`` without the trace-id lookup's view (``otel_traces_trace_id_ts_mv``).
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

from bench.insert_merge_cost import _cpu, _settle

VARIANTS: dict[str, list[str]] = {
    "intake": [],
    "direct": [],
    "no_value_indexes": [
        "ALTER TABLE {db}.otel_traces DROP INDEX idx_span_attr_value",
        "ALTER TABLE {db}.otel_traces DROP INDEX idx_res_attr_value",
    ],
    "no_skip_indexes": [
        f"ALTER TABLE {{db}}.otel_traces DROP INDEX {name}"
        for name in (
            "idx_trace_id",
            "idx_res_attr_key",
            "idx_res_attr_value",
            "idx_span_attr_key",
            "idx_span_attr_value",
            "idx_duration",
        )
    ],  # fmt: skip
    "no_trace_id_view": ["DROP VIEW {db}.otel_traces_trace_id_ts_mv"],
}
"""Statements applied to a fresh store before a variant's inserts."""
FIXED_INSERTS = 200


def _bodies(store: Any, size: int, llm: bool) -> tuple[bytes, bytes, bytes, bytes]:
    """One insert's body as the writer sends it, the same rows in ``otel_traces``'s layout, then one row of each."""
    from bench.limits import decoded_rows
    from spanscore.storage.rows import records_to_json

    rows = decoded_rows(size, llm)
    intake = records_to_json(rows)
    store.client.command("CREATE DATABASE IF NOT EXISTS scratch")
    store.client.command(f"CREATE TABLE scratch.t AS {store.database}.otel_traces ENGINE = Memory")
    store.client.command(f"CREATE TABLE scratch.i AS {store.database}.otel_traces_intake ENGINE = Memory")
    store.client.command(f"CREATE MATERIALIZED VIEW scratch.v TO scratch.t AS {_view_select(store)}")
    store.client.raw_insert("scratch.i", insert_block=intake, fmt="JSONEachRow")
    direct = bytes(store.client.raw_query("SELECT * FROM scratch.t", fmt="JSONEachRow"))
    store.client.command("DROP DATABASE scratch")
    return intake, direct, records_to_json(rows[:1]), direct.split(b"\n", 1)[0]


def _view_select(store: Any) -> str:
    """The intake view's SELECT, pointed at the scratch copy of the Null table."""
    create = store.internal_query(
        "SELECT as_select FROM system.tables WHERE database = {db:String} AND name = 'otel_traces_intake_mv'",
        {"db": store.database},
    )[0][0]
    return str(create).replace(f"{store.database}.otel_traces_intake", "scratch.i")


def measure(variant: str, size: int, total: int, llm: bool) -> dict[str, Any]:
    from spanscore.storage.clickhouse import ClickHouseStore
    from spanscore.storage.insert_token import token_settings

    with tempfile.TemporaryDirectory(prefix="spanscore-bench-intake-") as workdir:
        store = ClickHouseStore(f"chdb:///{Path(workdir, 'data').as_posix().lstrip('/')}", "spanscore")
        store.open()
        try:
            intake, direct, one_intake, one_direct = _bodies(store, size, llm)
            for statement in VARIANTS[variant]:
                store.client.command(statement.format(db=store.database))
            table, body = ("otel_traces", direct) if variant == "direct" else ("otel_traces_intake", intake)
            single = one_direct if variant == "direct" else one_intake

            def insert(block: bytes) -> None:
                settings = {"insert_deduplicate": 1, "deduplicate_blocks_in_dependent_materialized_views": 1}
                store.client.raw_insert(
                    f"{store.database}.{table}", insert_block=block, fmt="JSONEachRow",
                    settings={**settings, **token_settings()},
                )  # fmt: skip

            load = os.getloadavg()
            cpu, wall = _cpu(), time.perf_counter()
            inserts = 0
            while inserts * size < total:
                insert(body)
                inserts += 1
            insert_cpu, insert_wall = _cpu() - cpu, time.perf_counter() - wall
            _settle(store)
            merge_cpu = _cpu() - cpu - insert_cpu
            fixed = _cpu()
            for _ in range(FIXED_INSERTS):
                insert(single)
            fixed = _cpu() - fixed
        finally:
            store.close()
    rows = inserts * size
    return {"variant": variant, "insert_rows": size, "llm": llm, "rows": rows,
            "insert_us_per_row": insert_cpu / rows * 1e6, "merge_us_per_row": merge_cpu / rows * 1e6,
            "total_us_per_row": (insert_cpu + merge_cpu) / rows * 1e6, "insert_wall_s": insert_wall,
            "fixed_ms_per_insert": fixed / FIXED_INSERTS * 1e3,
            "load_average": " / ".join(f"{v:.2f}" for v in load)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows inserted per case")
    parser.add_argument("--sizes", default="5000,50000", help="rows per insert, comma-separated")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    parser.add_argument("--llm", action="store_true", help="LLM-sized spans (about 5 KB) instead of small ones")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    spawn = multiprocessing.get_context("spawn")
    for _ in range(args.repeat):
        for size in [int(size) for size in args.sizes.split(",")]:
            for variant in args.variants.split(","):  # interleaved, so load drifts land on every variant alike
                with ProcessPoolExecutor(1, mp_context=spawn) as pool:
                    result = pool.submit(measure, variant, size, args.rows, args.llm).result(timeout=900)
                print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
