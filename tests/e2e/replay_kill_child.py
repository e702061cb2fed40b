"""A writer over the embedded engine, run as a child process so that a test can kill it between insert and delete.

``first``: acknowledges ``batches`` batches of ``rows`` records (spans behind an acknowledging spool, or
scores whose live insert fails and which are spooled), then lets storage take inserts. The replay's
delete of the files it has just inserted is replaced by a SIGKILL of this process: for spans the first
insert that merged several files, for scores the first replayed file. It prints ``acknowledged N`` and
``killing`` just before. ``successor``: opens the same store and spool, drains the spool, and prints one
JSON object of what storage holds.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from dataclasses import replace
from typing import Any

from spanscore.config import load_config
from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.records import SpanRecord
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.write import log_segments, replay
from spanscore.storage.write.paths import score_writer, span_writer
from spanscore.storage.write.writer import BatchWriter
from tests.unit.storage.test_rollups import BASE_NS, make_scores

_remove_all = replay._remove_all


def _kill_before_delete(merged_only: bool) -> None:
    def remove_or_die(*args: Any) -> None:
        if not merged_only or len(args[1]) > 1:
            print("killing", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)  # the insert returned; its files are still on disk
        _remove_all(*args)

    replay._remove_all = remove_or_die  # type: ignore[assignment]


def _kill_at_next_sync() -> None:
    """Every batch is acknowledged: the next sync is of the DONE record that marks the replayed ones inserted."""

    def die(fd: int) -> None:
        print("killing", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # the insert returned and its DONE record is written, not synced

    log_segments.os.fdatasync = die  # type: ignore[assignment]


def _batch(kind: str, index: int, rows: int, total: int) -> list[Any]:
    base = index * rows
    if kind == "scores":
        return make_scores(total)[base : base + rows]  # one run each: a score id of its own
    return [
        SpanRecord(
            f"{base + i:032x}", f"{base + i:016x}", "", "step", "Internal", BASE_NS + base + i, BASE_NS + base + i
        )
        for i in range(rows)
    ]


def _writer(kind: str, store: ClickHouseStore, settings: dict[str, Any]) -> BatchWriter[Any]:
    config = load_config(None, environ={})
    storage = config.storage
    storage.dsn, storage.database, storage.spool_dir = settings["dsn"], settings["database"], settings["spool_dir"]
    storage.flush_interval_s = 0.0
    storage.batch_max_spans = settings["batches"] * settings["rows"]  # room to merge every batch into one insert
    if kind == "spans":
        storage.acknowledge = "spooled"
        return span_writer(store, storage)
    return score_writer(store, storage)


async def first(kind: str, settings: dict[str, Any]) -> None:
    store = ClickHouseStore(settings["dsn"], settings["database"])
    store.open()
    writer = _writer(kind, store, settings)
    down = {"on": True}
    inserts = writer.inserter.inserts
    lane = "encoded" if inserts.encoded is not None else "rows"
    real = getattr(inserts, lane)

    async def insert(batch: Any) -> None:
        if down["on"]:
            raise RetryableError("storage unavailable (injected)")
        await real.consume(batch)

    writer.inserter.inserts = replace(inserts, **{lane: Calling(insert)})
    if settings.get("kill_at") != "done_unsynced":
        _kill_before_delete(merged_only=kind == "spans")
    await writer.start()
    for index in range(settings["batches"]):  # one at a time: one spool file each
        await writer.consume(_batch(kind, index, settings["rows"], settings["batches"] * settings["rows"]))
    print(f"acknowledged {settings['batches'] * settings['rows']}", flush=True)
    if settings.get("kill_at") == "done_unsynced":
        _kill_at_next_sync()
    down["on"] = False
    await asyncio.sleep(60)
    print("no insert reached the delete", flush=True)


async def successor(kind: str, settings: dict[str, Any]) -> None:
    store = ClickHouseStore(settings["dsn"], settings["database"])
    store.open()
    writer = _writer(kind, store, settings)
    await writer.start()
    await writer.shutdown()  # drains the spool while storage takes inserts
    if kind == "spans":
        sql = "SELECT count(), uniqExact(SpanId), (SELECT count() FROM otel_traces_trace_id_ts) FROM otel_traces"
    else:
        sql = "SELECT count(), uniqExact(ScoreId), (SELECT countMerge(ScoresState) FROM scores_1h) FROM scores"
    rows, distinct, downstream = store.internal_query(sql)[0]
    left = writer.pending + (writer.spool.batches if writer.spool is not None else 0)
    print(json.dumps({"rows": rows, "distinct": distinct, "downstream": downstream, "left": left}), flush=True)
    store.close()


if __name__ == "__main__":
    role, kind, raw = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    asyncio.run(first(kind, raw) if role == "first" else successor(kind, raw))
