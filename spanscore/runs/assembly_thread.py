"""The run assembler on a thread of its own: the event loop only hands over stored batches and asks what is ready.

Assembling stored spans into runs and checking readiness cost about 6.6 µs per span on the event loop (#43),
time every receiver, acknowledgement and API answer waited behind. Here one worker thread owns the
``RunAssembler``; every call on it (intake, readiness, recovery, a lost replica's traces, the handover's list)
goes through one FIFO queue, so a trace's batches are added in the order they were stored and a readiness check
sees every batch handed over before it, as when everything ran on the loop.

The queue is bounded in records (``max_queued_records``) and in estimated bytes (``max_queued_bytes``): when
the thread falls behind, the next hand-over waits for room, which holds the span writer's hand-on as the loop's
own work did, so memory stays bounded (a single batch larger than a bound is still taken when the queue is
empty: nothing wedges). The bytes matter for LLM-sized spans: decoded, one of the bench's takes about 7.1 KB,
so the 200,000 the record bound lets queue would hold about 1.3 GiB, where 256 MiB estimated is about 320 MiB
(#43, session 26: an independent check's service reached 3-5.4 GB of RSS with the queue at its bound). Waiting
hand-overs are served in arrival order. A batch whose intake fails is logged and counted, not retried: its rows
are stored, and the next start's recovery reads recent stored traces back.

After ``close`` (live scoring stopped, the thread drained and gone) calls run where they are made: nothing else
touches the assembler any more, and the fleet handover still asks it which traces it held.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from spanscore.runs.readiness import RunAssembler

T = TypeVar("T")
log = logging.getLogger(__name__)

MAX_QUEUED_RECORDS = 200_000
"""Spans and log records handed over and not yet added: a few large inserts (``storage.insert_max_spans``)."""
MAX_QUEUED_BYTES = 256 << 20
"""Their estimated bytes (``runs.sizes``): about 50,000 LLM-sized spans, where the record bound would let 200,000."""


class AssemblyThread:
    def __init__(
        self,
        assembler: RunAssembler,
        max_queued_records: int = MAX_QUEUED_RECORDS,
        max_queued_bytes: int = MAX_QUEUED_BYTES,
    ) -> None:
        self.assembler = assembler
        self._max = max_queued_records
        self._max_bytes = max_queued_bytes
        self.queued_records = 0
        """Records handed over and not yet added (a gauge)."""
        self.queued_bytes = 0
        """Their estimated bytes (a gauge)."""
        self.failed_batches = 0
        """Batches whose intake raised (logged; their rows are stored, the next start's recovery reads them)."""
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False
        self._stopping: asyncio.Future[None] | None = None
        self._order = asyncio.Lock()
        self._room = asyncio.Event()

    def open(self) -> None:
        """Take work on the thread again (live scoring started after a stop)."""
        self._closed = False
        self._stopping = None

    async def _here(self) -> bool:
        """Whether work runs where it is asked: after ``close``, once the thread has finished its queue."""
        if not self._closed:
            return False
        if self._stopping is not None:
            await asyncio.shield(self._stopping)
        return True

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="run-assembly")
        return self._executor

    async def hand_over(self, work: Callable[[], object], records: int, size: int = 0) -> None:
        """Queue ``work`` (the intake of ``records`` spans or logs, about ``size`` bytes); return once queued."""
        loop = asyncio.get_running_loop()
        async with self._order:  # FIFO: a later batch never overtakes one waiting for room
            while not self._closed and self.queued_records and self._full(records, size):
                self._room.clear()
                await self._room.wait()
            if await self._here():
                work()
                return
            self.queued_records += records
            self.queued_bytes += size
            future = self._pool().submit(work)
        future.add_done_callback(lambda done: loop.call_soon_threadsafe(self._finished, done, records, size))

    def _full(self, records: int, size: int) -> bool:
        return self.queued_records + records > self._max or self.queued_bytes + size > self._max_bytes

    def _finished(self, done: Future[object], records: int, size: int) -> None:
        self.queued_records -= records
        self.queued_bytes -= size
        self._room.set()
        error = done.exception()
        if error is not None:
            self.failed_batches += 1
            log.error("run assembly: a stored batch was not added to its runs", exc_info=error)

    async def call(self, work: Callable[..., T], *args: object) -> T:
        """``work(*args)`` on the thread, after everything handed over before it; its result."""
        if await self._here():
            return work(*args)
        return await asyncio.get_running_loop().run_in_executor(self._pool(), work, *args)

    async def close(self) -> None:
        """Finish what was handed over and stop the thread; later calls run where they are made."""
        self._closed = True
        self._room.set()
        executor, self._executor = self._executor, None
        if executor is not None:
            self._stopping = asyncio.ensure_future(asyncio.to_thread(executor.shutdown, True))
        if self._stopping is not None:
            await asyncio.shield(self._stopping)
