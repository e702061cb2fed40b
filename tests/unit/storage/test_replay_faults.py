"""Faults around the spooled acknowledgement's replay, with real parts: the embedded store with its migrations,
the span writer (``paths.span_writer``) over the spool log on disk. Only an I/O error is injected, once.

Found by an independent hostile review (session 27): one transient error outside the insert ended the replay for
the life of the process, a batch whose log sync failed was stored beside the client's retry, and a graceful
shutdown could stop the replay between two of its lanes' last batches.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from spanscore.config import load_config
from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.records import SpanRecord
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.write import log_segments
from spanscore.storage.write.paths import span_writer
from spanscore.storage.write.writer import BatchWriter
from tests.unit.storage.test_rollups import BASE_NS

ROWS = 10


def _spans(first: int, rows: int = ROWS) -> list[SpanRecord]:
    return [
        SpanRecord(f"{i:032x}", f"{i:016x}", "", "step", "Internal", BASE_NS + i, BASE_NS + i + 5)
        for i in range(first, first + rows)
    ]


def _writer(store: ClickHouseStore, spool_dir: Path) -> BatchWriter[SpanRecord]:
    storage = load_config(None, environ={}).storage
    storage.spool_dir = spool_dir.as_posix()
    storage.flush_interval_s = 0.0
    storage.insert_interval_s = 0.0
    assert storage.acknowledge == "spooled"
    return span_writer(store, storage)


def _stored(store: ClickHouseStore) -> tuple[int, int, int]:
    rows, distinct, downstream = store.internal_query(
        "SELECT count(), uniqExact(SpanId), (SELECT count() FROM otel_traces_trace_id_ts) FROM otel_traces"
    )[0]
    return int(rows), int(distinct), int(downstream)


class _FailOneSync:
    """``os.fdatasync`` for the spool log: the next call after ``arm()`` fails with EIO (a transient disk error)."""

    def __init__(self) -> None:
        self._real = os.fdatasync
        self.armed = False
        self.failed = 0

    def arm(self) -> None:
        self.armed = True

    def __call__(self, fd: int) -> None:
        if self.armed:
            self.armed = False
            self.failed += 1
            raise OSError(errno.EIO, "Input/output error (injected, once)")
        self._real(fd)


async def _until(condition, wait_s: float) -> bool:  # type: ignore[no-untyped-def]
    for _ in range(int(wait_s * 20)):
        if condition():
            return True
        await asyncio.sleep(0.05)
    return bool(condition())


@pytest.mark.reliability("no-acknowledged-span-lost")
async def test_one_io_error_marking_a_set_done_does_not_stop_the_replay(
    store: ClickHouseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One EIO marking an inserted set done does not stop the replay: later acknowledged batches are all stored.

    It used to end the replay's task (nothing restarted it): every later batch stayed on disk only while /healthz
    said nothing. The set is now inserted again under its token (deduplicated) and marked done.
    """
    sync = _FailOneSync()
    monkeypatch.setattr(log_segments.os, "fdatasync", sync)
    writer = _writer(store, tmp_path / "spool")
    inserts = writer.inserter.inserts
    assert inserts.encoded is not None
    real, gate = inserts.encoded, asyncio.Event()

    async def gated(parts: Sequence[bytes]) -> None:
        await gate.wait()  # storage slow for the first insert only, so that the failure is armed before its DONE
        await real.consume(parts)

    writer.inserter.inserts = replace(inserts, encoded=Calling(gated))
    await writer.start()
    await writer.consume(_spans(0))  # acknowledged: logged and synced
    sync.arm()  # the next sync of the log is the DONE record of the insert below
    gate.set()
    await _until(lambda: sync.failed == 1, 10)  # nothing else syncs the log meanwhile: this was the DONE record
    assert sync.failed == 1, "no DONE record was synced"
    for first in range(ROWS, 5 * ROWS, ROWS):
        await writer.consume(_spans(first))  # each acknowledged: its append's sync works again
    await _until(lambda: _stored(store)[0] == 5 * ROWS, 15)
    replay = writer._replay
    assert replay is not None
    task = replay._task
    stored = _stored(store)
    print(
        f"\nstored={stored} acknowledged={5 * ROWS} spool_batches={writer.spool.batches if writer.spool else None} "
        f"replay_task_done={task is not None and task.done()} "
        f"replay_error={task.exception() if task is not None and task.done() else None!r} "
        f"problems()={writer.problems()}"
    )
    try:
        assert stored[0] == 5 * ROWS, (
            f"acknowledged {5 * ROWS} spans, {stored[0]} stored after 15 s; the replay task "
            f"{'died' if task is not None and task.done() else 'is alive'}; /healthz problems: {writer.problems()}"
        )
    finally:
        try:
            await writer.shutdown()
        except OSError as exc:
            print(f"shutdown raised: {exc!r}")


async def test_a_batch_whose_log_sync_failed_is_not_stored_beside_the_clients_retry(
    store: ClickHouseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch whose log sync failed is not stored: its export was refused, and the exporter's retry is stored once.

    The batch stayed listed, and the replay inserted it too, under a token of its own, beside the retry.
    """
    sync = _FailOneSync()
    monkeypatch.setattr(log_segments.os, "fdatasync", sync)
    writer = _writer(store, tmp_path / "spool")
    await writer.start()
    export = _spans(0)
    sync.arm()
    with pytest.raises(RetryableError):
        await writer.consume(export)  # refused: the exporter retries the same spans
    assert sync.failed == 1
    await writer.consume(export)  # the retry, acknowledged
    await _until(lambda: writer.spool is not None and writer.spool.batches == 0, 20)
    await writer.shutdown()
    rows, distinct, downstream = _stored(store)
    assert (rows, distinct, downstream) == (len(export),) * 3, f"{rows} rows stored for {distinct} distinct spans"


@pytest.mark.reliability("no-acknowledged-span-lost")
async def test_a_graceful_shutdown_inserts_the_last_export_it_acknowledged(
    store: ClickHouseStore, tmp_path: Path
) -> None:
    """A graceful shutdown inserts every export it acknowledged, the last one logged as it began included.

    Told to close before the lanes had logged their last batches, the replay could find the spool empty in between
    and stop. The encode is slowed to 300 ms (a 20,000-span LLM batch on a loaded machine) only to place the last
    batch across the replay's idle wake-up.
    """
    import time

    writer = _writer(store, tmp_path / "spool")
    assert writer.spool is not None
    codec = writer.spool.codec

    def slow_encode(records):  # type: ignore[no-untyped-def]
        time.sleep(0.3)
        return codec.parts(records)

    writer.spool.codec = replace(codec, encode_parts=slow_encode)  # type: ignore[misc]
    await writer.start()  # the replay starts its idle wait now: it wakes every 1.0 s while the spool is empty
    await asyncio.sleep(0.8)
    export = asyncio.create_task(writer.consume(_spans(0)))
    await asyncio.sleep(0)
    await writer.shutdown()
    await export  # acknowledged
    left = writer.spool.batches
    rows = _stored(store)[0]
    print(f"\nacknowledged {ROWS} spans; after shutdown: stored={rows}, left in the spool={left} batches")
    assert (rows, left) == (ROWS, 0), "an acknowledged export was left in the spool by a graceful shutdown"


@pytest.mark.reliability("no-acknowledged-span-lost")
async def test_one_read_error_on_a_batch_read_back_does_not_stop_the_replay(
    store: ClickHouseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One EIO reading a batch back from disk does not stop the replay: every acknowledged batch is stored."""
    from spanscore.storage.write import log_records

    real_pread = os.pread
    armed = {"on": False, "failed": 0}

    def pread(fd: int, length: int, offset: int) -> bytes:
        if armed["on"]:
            armed["on"] = False
            armed["failed"] += 1
            raise OSError(errno.EIO, "Input/output error (injected, once)")
        return real_pread(fd, length, offset)

    monkeypatch.setattr(log_records.os, "pread", pread)
    writer = _writer(store, tmp_path / "spool")
    assert writer._replay is not None
    writer._replay.logged._max_bytes = 1  # nothing kept in memory: every batch is read back from the log
    armed["on"] = True
    await writer.start()
    for first in range(0, 5 * ROWS, ROWS):
        await writer.consume(_spans(first))  # each acknowledged
    await _until(lambda: _stored(store)[0] == 5 * ROWS, 15)
    task = writer._replay._task
    stored = _stored(store)
    print(
        f"\nread failures injected={armed['failed']} stored={stored} acknowledged={5 * ROWS} "
        f"replay_task_done={task is not None and task.done()} "
        f"replay_error={task.exception() if task is not None and task.done() else None!r} "
        f"problems()={writer.problems()}"
    )
    try:
        assert stored[0] == 5 * ROWS, f"acknowledged {5 * ROWS} spans, {stored[0]} stored after 15 s"
    finally:
        try:
            await writer.shutdown()
        except OSError as exc:
            print(f"shutdown raised: {exc!r}")
