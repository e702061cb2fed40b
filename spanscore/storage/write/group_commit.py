"""Group commit: many concurrent callers, few large writes.

Each ``consume`` call appends its records to a bounded pending list and waits until
the batch holding them has been written by the sink (the next stage, a ``Consumer``), so the
caller's acknowledgement means whatever the sink's return means (stored, or logged in the spool). One task
flushes when ``batch_max`` records are waiting or the oldest has waited
``flush_interval``; concurrent callers share each write, which is what makes small
exports cheap. Past ``max_pending`` it refuses new work with ``RetryableError``
(backpressure) instead of growing. A failed write fails every waiter of that batch
with a retryable error, so callers resend and nothing acknowledged is lost. This is
the first of the write path's pieces; ``BatchWriter`` puts the spool and the
inserter behind it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from spanscore.errors import RetryableError
from spanscore.pipeline import Consumer
from spanscore.storage.write.writer_config import WriterConfig

T = TypeVar("T")


@dataclass(slots=True)
class _Pending(Generic[T]):
    records: Sequence[T]
    done: asyncio.Future[None]


@dataclass(slots=True)
class WriterStats:
    accepted: int = 0
    stored: int = 0
    refused: int = 0
    spooled: int = 0
    replayed: int = 0
    failed_inserts: int = 0
    inserts: int = 0
    last_error: str = ""
    insert_seconds: float = 0.0
    handon_wait_seconds: float = 0.0
    """Seconds stored records waited for the next stage to take them (the run assembler's queue, when full)."""
    batch_sizes: list[int] = field(default_factory=list)


class GroupCommit(Generic[T]):
    """Bounded, flushing on size or time, with ``shutdown`` that drains."""

    def __init__(
        self,
        name: str,
        sink: Consumer[Sequence[T]],
        config: WriterConfig,
        stats: WriterStats | None = None,
    ) -> None:
        self.name = name
        self._sink = sink
        """The next stage: a batch is written when its ``consume`` returns."""
        self._batch_max = config.batch_max
        self._flush_interval = config.flush_interval
        self._max_pending = config.max_pending
        self.stats = stats or WriterStats()
        self._queue: list[_Pending[T]] = []
        self._pending_count = 0
        self._oldest: float = 0.0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def pending(self) -> int:
        return self._pending_count

    async def start(self) -> None:
        if self._task is None:
            self._closing = False
            self._task = asyncio.create_task(self._run(), name=f"writer-{self.name}")

    async def consume(self, records: Sequence[T], /) -> None:
        """Return once ``records`` are stored; raise RetryableError when full or storage fails."""
        if not records:
            return
        if self._closing or self._task is None:
            raise RetryableError(f"{self.name} writer is shutting down", retry_after=5.0)
        if self._pending_count + len(records) > self._max_pending and self._pending_count > 0:
            self.stats.refused += len(records)
            raise RetryableError(f"{self.name} writer is full ({self._pending_count} waiting)", retry_after=1.0)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if not self._queue:
            self._oldest = time.monotonic()
        self._queue.append(_Pending(records, done))
        self._pending_count += len(records)
        self.stats.accepted += len(records)
        self._wake.set()
        # The writer owns the future: a cancelled exporter must not cancel the shared insert.
        await asyncio.shield(done)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            if not self._queue:
                self._wake.clear()
                if self._closing:
                    return
                continue
            if self._pending_count < self._batch_max and not self._closing:
                delay = self._flush_interval - (time.monotonic() - self._oldest)
                if delay > 0:
                    await self._sleep_or_full(delay)
            await self._flush_once()

    async def _sleep_or_full(self, delay: float) -> None:
        await wait_while(
            self._wake, time.monotonic() + delay, lambda: self._pending_count < self._batch_max and not self._closing
        )

    def _take_batch(self) -> list[_Pending[T]]:
        batch: list[_Pending[T]] = []
        size = 0
        while self._queue and (not batch or size + len(self._queue[0].records) <= self._batch_max):
            item = self._queue.pop(0)
            batch.append(item)
            size += len(item.records)
        self._oldest = time.monotonic()
        return batch

    async def _flush_once(self) -> None:
        batch = self._take_batch()
        records: list[T] = [r for item in batch for r in item.records]
        try:
            await self._sink.consume(records)
        except Exception as exc:  # every failure becomes "retry later" for the waiters
            error = exc if isinstance(exc, RetryableError) else RetryableError(f"storage write failed: {exc}")
            for item in batch:
                if not item.done.done():
                    item.done.set_exception(error)
                    item.done.exception()  # mark retrieved: a waiter may have gone away
        else:
            for item in batch:
                if not item.done.done():
                    item.done.set_result(None)
        finally:
            self._pending_count -= len(records)
            if not self._queue:
                self._wake.clear()
            if self._closing:
                self._wake.set()

    async def shutdown(self) -> None:
        """Flush everything already accepted, then stop; safe to call twice or before start."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None


async def wait_while(event: asyncio.Event, deadline: float, waiting: Callable[[], bool]) -> None:
    """Wait until ``deadline`` (monotonic) while ``waiting()`` holds, checking it again whenever ``event`` fires."""
    while waiting():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        event.clear()
        try:
            await asyncio.wait_for(event.wait(), remaining)
        except TimeoutError:
            return
