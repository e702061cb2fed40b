from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.storage.write.spool import Spool
from spanscore.storage.write.writer import BatchWriter, Inserts, WriterConfig
from tests.fakes.collected import Collected


def test_batches_come_back_in_order_and_survive_a_new_instance(tmp_path: Path) -> None:
    spool: Spool[int] = Spool(tmp_path, max_bytes=1 << 20)
    spool.append([1, 2])
    spool.append([3])
    (tmp_path / "000000000099.tmp").write_bytes(b"half-written")  # a crash mid-append
    reopened: Spool[int] = Spool(tmp_path, max_bytes=1 << 20)
    assert reopened.batches == 2 and not list(tmp_path.glob("*.tmp"))
    first = reopened.waiting(1)[0]
    assert reopened.read(first) == [1, 2]
    reopened.remove(first)
    reopened.append([4])
    seen = []
    while paths := reopened.waiting(1):
        seen.append(reopened.read(paths[0]))
        reopened.remove(paths[0])
    assert seen == [[3], [4]]
    assert reopened.batches == 0 and reopened.size_bytes == 0


def test_a_full_spool_refuses_with_a_retry_hint(tmp_path: Path) -> None:
    spool: Spool[str] = Spool(tmp_path, max_bytes=200)
    spool.append(["x"])
    with pytest.raises(RetryableError, match="spool is full") as caught:
        spool.append(["y" * 500])
    assert caught.value.retry_after > 0
    assert spool.batches == 1


class FlakyStore:
    def __init__(self) -> None:
        self.down = True
        self.stored: list[int] = []

    async def insert(self, records: list[int]) -> None:  # type: ignore[override]
        if self.down:
            raise RetryableError("storage down")
        self.stored.extend(records)


async def test_writer_spools_while_storage_is_down_and_replays_in_order(tmp_path: Path) -> None:
    store = FlakyStore()
    seen_stored: Collected[int] = Collected()
    writer: BatchWriter[int] = BatchWriter(
        "t",
        Inserts(Calling(store.insert)),
        WriterConfig(batch_max=2, flush_interval=0.0, max_pending=100, replay_backoff_s=0.01),
        stored=seen_stored,
        spool=Spool(tmp_path, 1 << 20),
    )
    await writer.start()
    for value in range(6):
        await writer.consume([value])  # acknowledged although storage is down: it is on disk
    assert store.stored == [] and writer.stats.spooled == 6
    store.down = False
    for _ in range(500):
        if writer.stats.replayed == 6:  # counted once the batch files are gone, not just inserted
            break
        await asyncio.sleep(0.01)
    await writer.consume([6])  # arrives after the outage: lands after everything spooled
    await writer.shutdown()
    assert store.stored == [0, 1, 2, 3, 4, 5, 6]
    assert seen_stored == store.stored  # downstream sees spans only once they are in storage
    assert writer.stats.replayed == 6


async def test_spooled_batches_are_replayed_by_the_next_process(tmp_path: Path) -> None:
    store = FlakyStore()
    first: BatchWriter[int] = BatchWriter(
        "t",
        Inserts(Calling(store.insert)),
        WriterConfig(batch_max=10, flush_interval=0.0, max_pending=100),
        spool=Spool(tmp_path, 1 << 20),
    )
    await first.start()
    await first.consume([1, 2, 3])
    await first.shutdown()  # storage still down: the batch stays on disk
    assert store.stored == []
    store.down = False
    second: BatchWriter[int] = BatchWriter(
        "t",
        Inserts(Calling(store.insert)),
        WriterConfig(batch_max=10, flush_interval=0.0, max_pending=100),
        spool=Spool(tmp_path, 1 << 20),
    )
    await second.start()
    for _ in range(200):
        if store.stored:
            break
        await asyncio.sleep(0.01)
    await second.shutdown()
    assert store.stored == [1, 2, 3]


def test_a_spool_on_a_nearly_full_disk_refuses_and_writes_nothing(tmp_path: Path) -> None:
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    spool: Spool[str] = Spool(tmp_path, max_bytes=1 << 20, min_free_bytes=free + (1 << 30))
    with pytest.raises(RetryableError, match="spool's disk is nearly full") as caught:
        spool.append(["x"])
    assert str(tmp_path) in str(caught.value) and caught.value.retry_after > 0
    assert spool.batches == 0 and spool.size_bytes == 0 and not list(tmp_path.iterdir())
    roomy: Spool[str] = Spool(tmp_path, max_bytes=1 << 20, min_free_bytes=1)
    roomy.append(["x"])
    assert roomy.batches == 1
