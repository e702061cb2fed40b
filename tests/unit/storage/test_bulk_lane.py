"""A large export is written beside the small ones: a small export's OK does not wait for a large insert."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from spanscore.pipeline import Calling
from spanscore.storage.write.writer import BatchWriter, Inserts, WriterConfig
from tests.fakes.collected import Collected


class _Storage:
    """Small inserts go through at once; the bulk connection's insert waits until it is let go."""

    def __init__(self) -> None:
        self.let_go = asyncio.Event()
        self.small: list[int] = []
        self.bulk: list[int] = []

    async def insert(self, rows: Sequence[int]) -> None:
        self.small.extend(rows)

    async def insert_bulk(self, rows: Sequence[int]) -> None:
        await self.let_go.wait()
        self.bulk.extend(rows)


def _writer(storage: _Storage, bulk_min: int, stored: Collected[int]) -> BatchWriter[int]:
    return BatchWriter(
        "spans",
        Inserts(Calling(storage.insert), bulk=Calling(storage.insert_bulk)),
        WriterConfig(batch_max=100_000, flush_interval=0.0, max_pending=100_000, bulk_min=bulk_min),
        stored=stored,
    )


async def test_a_small_export_is_stored_while_a_large_insert_is_still_running() -> None:
    storage, stored = _Storage(), Collected[int]()
    writer = _writer(storage, bulk_min=1000, stored=stored)
    await writer.start()
    large = asyncio.create_task(writer.consume(list(range(5000))))
    await asyncio.sleep(0.01)
    await asyncio.wait_for(writer.consume([-1, -2]), 2)  # answered although the large insert has not finished
    assert storage.small == [-1, -2] and not large.done() and writer.pending == 5000
    storage.let_go.set()
    await asyncio.wait_for(large, 2)
    await writer.shutdown()
    assert storage.bulk == list(range(5000)) and sorted(stored) == sorted([-1, -2, *range(5000)])
    assert writer.stats.stored == 5002


async def test_without_a_bulk_lane_everything_takes_the_one_lane() -> None:
    storage, stored = _Storage(), Collected[int]()
    writer = _writer(storage, bulk_min=0, stored=stored)
    await writer.start()
    await asyncio.wait_for(writer.consume(list(range(5000))), 2)
    await writer.shutdown()
    assert storage.small == list(range(5000)) and storage.bulk == []
