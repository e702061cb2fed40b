"""A restart's later waves: the undecided traces the first recovery could not hold, adopted as room frees up.

At start the run assembler reads the latest stored traces back until it holds half of any of its bounds
(``RunAssembler.recover``). A crash under load leaves more than that undecided: run assembly lags stored
traffic by seconds, and at 2,500 traces/s half the byte bound held about 2 s of LLM-sized traces, so an
independent check found 4,700 acknowledged traces that never got a decision or a ``score_decisions`` row (#43).

Before the first wave, the traces that nothing decided on (no decision, score or session turn) are listed
from storage, ids only; the ones the first wave took are dropped from the list, and the rest are adopted
``recovery_chunk`` at a time whenever the traces still waiting in the assembler hold less than half of each
bound (``RunAssembler.recovery_room``), so live traffic keeps the other half and nothing is evicted early.
A failed read is logged and tried again after a pause; the list lives in memory, so a second crash starts
over from storage, which still says what is undecided.
"""

from __future__ import annotations

import asyncio
import logging
import time

from spanscore.pipeline import Background
from spanscore.runs.assembly_thread import AssemblyThread
from spanscore.runs.recovered import UndecidedSource

log = logging.getLogger(__name__)

RETRY_S = 5.0
"""Pause after a failed read of a wave before the same wave is tried again."""


class RecoveryWaves:
    def __init__(self, assembly: AssemblyThread, *, interval_s: float) -> None:
        self._assembly = assembly
        self._interval = interval_s
        self._background = Background("recovery-waves")
        self._source: UndecidedSource | None = None
        self._ids: list[str] = []
        self.adopted = 0
        """Traces adopted by the waves since start."""

    @property
    def waiting(self) -> int:
        """Undecided traces listed at start and not adopted yet (a gauge)."""
        return len(self._ids)

    def start(self, source: UndecidedSource, undecided: list[str]) -> None:
        """Adopt ``undecided`` (listed before the first wave) in waves, less what the assembler holds now."""
        held = set(self._assembly.assembler.pending_trace_ids())
        self._source, self._ids = source, [trace_id for trace_id in undecided if trace_id not in held]
        if self._ids:
            log.info("recovery: %d undecided traces wait for room in run assembly", len(self._ids))
            self._background.start(self._loop)

    async def stop(self) -> None:
        await self._background.stop()

    async def _loop(self) -> None:
        stopping = self._background.stopping
        while self._ids and not stopping.is_set():
            pause = self._interval
            try:
                if await self._assembly.call(self._assembly.assembler.recovery_room):
                    await self._wave()
                    pause = 0.0  # room may be left for the next wave at once
            except Exception:
                log.warning(
                    "recovery: reading %d undecided traces back failed; trying again",
                    min(len(self._ids), self._assembly.assembler.recovery_chunk),
                    exc_info=True,
                )
                pause = RETRY_S
            try:
                await asyncio.wait_for(stopping.wait(), pause)
            except TimeoutError:
                pass
        if not self._ids:
            log.info("recovery: every undecided trace listed at start was adopted (%d in waves)", self.adopted)

    async def _wave(self) -> None:
        assert self._source is not None
        source, ids = self._source, self._ids[: self._assembly.assembler.recovery_chunk]
        traces = await asyncio.to_thread(source.traces, ids)
        handled = await asyncio.to_thread(source.handled_runs, ids)
        self.adopted += await self._assembly.call(self._assembly.assembler.adopt, traces, handled, time.time_ns())
        del self._ids[: len(ids)]
