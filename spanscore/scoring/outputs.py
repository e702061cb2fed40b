"""Where score, decision and scored-run rows go: durable writers that never give a row up, and the exporter.

``UntilDurable`` turns a writer that may refuse for now (``RetryableError``: storage down without a
spool, the spool full, the writer full) into a consumer that waits until the rows are durable. The
wait is the backpressure: a score write holds its worker slot, the workers' queue fills, and ready runs
stay in the assembler until storage takes rows again. ``InBackground`` lets the workers move on while
a score row is written, bounded so that waiting rows cannot grow without limit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Generic, TypeVar

from spanscore.errors import RetryableError
from spanscore.pipeline import Consumer
from spanscore.storage.write.writer import BatchWriter

log = logging.getLogger(__name__)

R = TypeVar("R")


class UntilDurable(Generic[R]):
    """``Consumer[Sequence[R]]`` over a durable writer: returns once the rows are durable, retrying with backoff."""

    def __init__(self, writer: BatchWriter[R], *, first_delay_s: float = 0.2, max_delay_s: float = 5.0) -> None:
        self.writer = writer
        self.retries = 0
        self._first_delay = first_delay_s
        self._max_delay = max_delay_s

    async def consume(self, rows: Sequence[R], /) -> None:
        delay = self._first_delay
        while True:
            try:
                await self.writer.consume(rows)
                return
            except RetryableError as exc:
                self.retries += 1
                if self.retries % 50 == 1:
                    log.warning("waiting to write %s rows=%d error=%s", self.writer.name, len(rows), exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._max_delay)


class InBackground(Generic[R]):
    """``Consumer[Sequence[R]]`` that hands each batch to ``inner`` in a task of its own and returns at once.

    At most ``max_in_flight`` batches are out; past that, ``consume`` waits for one to finish. A crash
    before a score row lands leaves a ``sampled`` decision without a score, which recovery scores again.
    """

    def __init__(self, inner: Consumer[Sequence[R]], *, max_in_flight: int = 10_000) -> None:
        self._inner = inner
        self._slots = asyncio.Semaphore(max_in_flight)
        self._tasks: set[asyncio.Task[None]] = set()

    async def consume(self, rows: Sequence[R], /) -> None:
        await self._slots.acquire()
        task = asyncio.create_task(self._hand_on(rows))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _hand_on(self, rows: Sequence[R]) -> None:
        try:
            await self._inner.consume(rows)
        finally:
            self._slots.release()

    async def settle(self) -> None:
        """Wait until every batch handed over so far has been consumed (or failed)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
