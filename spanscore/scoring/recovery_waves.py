"""Undecided traces read back from storage in waves, as run assembly has room for them.

At start the run assembler reads the latest stored traces back until the traces it holds still waiting reach
half of any of its bounds (``RunAssembler.recover``). A crash under load leaves more than that undecided: run
assembly lags stored traffic by seconds, and at 2,500 traces/s half the byte bound held about 2 s of LLM-sized
traces, so an independent check found 4,700 acknowledged traces that never got a decision or a
``score_decisions`` row (#43). A fleet survivor taking up a lost replica's traces has the same problem: listed
by storage, there can be tens of thousands.

So the traces storage lists as undecided (``undecided_trace_ids``; the restart's, less those its first wave
took; or a lost replica's) are queued here and adopted ``recovery_chunk`` at a time, each chunk only as far as
the waiting traces stay under half of each bound (``RunAssembler.adopt_within_room``): live traffic keeps the
other half and nothing is evicted early. A listing may bring a filter (the fleet's: owned now, begun before the
loss, not handled) and a count to keep.

- A failed read is logged and tried again after a pause; after ``TRIES`` failures of one chunk its traces are
  tried one at a time, and one that still fails ``TRIES`` times is skipped and counted (``skipped``), so no
  trace stalls the ones behind it.
- A stop does not wait for a read in flight (a store that went away could hold it for minutes): it is left to
  end on its own, and its traces are read again by the next start.
- What is queued lives in memory: after a second crash the next start lists again from storage.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from spanscore.runs.assembly_thread import AssemblyThread
from spanscore.runs.recovered import RecoveredTrace, UndecidedSource

log = logging.getLogger(__name__)

RETRY_S = 5.0
"""Pause after a failed read of a wave before it is tried again."""
TRIES = 3
"""Failures of one chunk before its traces are tried one at a time, and of one trace before it is skipped."""

Keep = Callable[[list[RecoveredTrace], Mapping[str, Mapping[str, bool]]], list[RecoveredTrace]]
T = TypeVar("T")


@dataclass(slots=True, eq=False)
class _Listing:
    source: UndecidedSource
    ids: list[str]
    keep: Keep | None
    adopted: Callable[[int], None] | None
    failures: int = 0
    one_at_a_time: int = 0
    """Traces still to be tried one at a time (what was left of a chunk that failed ``TRIES`` times)."""


class _Stopped(Exception):
    """The waves were stopped while a read was in flight."""


class RecoveryWaves:
    def __init__(self, assembly: AssemblyThread, *, interval_s: float) -> None:
        self._assembly = assembly
        self._interval = interval_s
        self._listings: deque[_Listing] = deque()
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.adopted = 0
        """Traces adopted by the waves since start."""
        self.skipped = 0
        """Listed traces given up after ``TRIES`` failed reads of each (logged)."""

    @property
    def waiting(self) -> int:
        """Listed traces not adopted yet (a gauge)."""
        return sum(len(listing.ids) for listing in self._listings)

    async def add(
        self,
        source: UndecidedSource,
        trace_ids: list[str],
        *,
        keep: Keep | None = None,
        adopted: Callable[[int], None] | None = None,
    ) -> int:
        """Queue ``trace_ids`` (less those the assembler holds now) for adoption; returns how many were queued.

        ``keep`` filters each chunk as read (with what storage says was handled); ``adopted`` is told how many
        of each chunk were adopted.
        """
        held = set(await self._assembly.call(self._assembly.assembler.pending_trace_ids))
        ids = [trace_id for trace_id in trace_ids if trace_id not in held]
        if ids:
            self._listings.append(_Listing(source, ids, keep, adopted))
            if self._task is None or self._task.done():
                self._stopping.clear()
                self._task = asyncio.create_task(self._loop(), name="recovery-waves")
        return len(ids)

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _loop(self) -> None:
        assembler = self._assembly.assembler
        while self._listings and not self._stopping.is_set():
            listing = self._listings[0]
            if not listing.ids:
                self._listings.popleft()
                continue
            pause = self._interval
            try:
                if await self._assembly.call(assembler.recovery_room):
                    await self._wave(listing)
                    pause = 0.0  # room may be left for the next wave at once
            except _Stopped:
                return
            except Exception:
                pause = RETRY_S
                self._failed(listing)
            try:
                await asyncio.wait_for(self._stopping.wait(), pause)
            except TimeoutError:
                pass
        if not self._listings:
            log.info("recovery: every listed undecided trace was adopted (%d in waves)", self.adopted)

    async def _wave(self, listing: _Listing) -> None:
        assembler = self._assembly.assembler
        size = 1 if listing.one_at_a_time else assembler.recovery_chunk
        ids = listing.ids[:size]
        traces = await self._read(listing.source.traces, ids)
        handled = await self._read(listing.source.handled_runs, ids)
        wanted = listing.keep(traces, handled) if listing.keep is not None else traces
        taken = await self._assembly.call(assembler.adopt_within_room, wanted, handled, time.time_ns())
        # Done: every id before the first trace wanted and not adopted (the rest waits for room).
        done = len(ids) if taken == len(wanted) else ids.index(wanted[taken].trace_id)
        del listing.ids[:done]
        listing.failures = 0
        listing.one_at_a_time = max(0, listing.one_at_a_time - done)
        self.adopted += taken
        if listing.adopted is not None and taken:
            listing.adopted(taken)

    def _failed(self, listing: _Listing) -> None:
        listing.failures += 1
        if listing.one_at_a_time and listing.failures >= TRIES:
            trace_id = listing.ids.pop(0)
            listing.one_at_a_time -= 1
            listing.failures = 0
            self.skipped += 1
            log.error(
                "recovery: trace_id=%s could not be read back after %d tries; skipped", trace_id, TRIES, exc_info=True
            )
        elif listing.failures >= TRIES:
            listing.one_at_a_time = min(len(listing.ids), self._assembly.assembler.recovery_chunk)
            listing.failures = 0
            log.warning(
                "recovery: a chunk of undecided traces failed %d times; trying them one at a time", TRIES, exc_info=True
            )
        else:
            log.warning("recovery: reading undecided traces back failed; trying again", exc_info=True)

    async def _read(self, read: Callable[[Any], T], argument: Any) -> T:
        """``read(argument)`` on a thread, abandoned (``_Stopped``) if the waves are stopped first."""
        reading = asyncio.ensure_future(asyncio.to_thread(read, argument))
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if not reading.done():
            reading.add_done_callback(_quietly)  # its outcome no longer matters; do not report it as lost
            raise _Stopped
        return reading.result()


def _quietly(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
