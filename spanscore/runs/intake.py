"""Spans and logs into the run assembler: what the span and log writers hand on.

A batch reaches the assembler's own thread (``AssemblyThread``) stamped with the time it arrived: the event loop
does not assemble. It comes one of two ways:

- **once stored** (``consume``): after its insert, as always under ``acknowledge: stored``;
- **once acknowledged from the spool** (``take``, ``acknowledge: spooled``, ``storage.write.early``): before its
  insert, so a run's quiet period starts when its spans were acknowledged, not up to ``insert_interval_s`` plus
  an insert later. The assembler then holds each run whose trace has spans from such a batch until the writer
  says the batch is stored (``inserted``), so a run that is scored is still always a run that can be read back
  (recovery, the run page, backfill all read storage). A batch is declined, and comes once stored instead, when
  the thread's queue has no room or ``MAX_UNINSERTED_RECORDS`` taken records are not stored yet (storage down):
  what the assembler holds for storage stays bounded.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from typing import Generic, TypeVar

from spanscore.records import LogRecord, SpanRecord
from spanscore.runs.assembly_thread import AssemblyThread

MAX_UNINSERTED_RECORDS = 200_000
"""Records taken before their insert and not yet stored, past which batches come once stored instead."""

R = TypeVar("R", SpanRecord, LogRecord)


class _Intake(Generic[R]):
    def __init__(self, assembly: AssemblyThread, add: Callable[[Iterable[R], int, Hashable | None], None]) -> None:
        self._assembly = assembly
        self._add: Callable[[Iterable[R], int, Hashable | None], None] = add
        self._taken: dict[Hashable, int] = {}
        """Batches taken before their insert, not yet stored, and their record counts."""
        self._uninserted = 0
        self.early_batches = 0
        """Batches taken as acknowledged (a counter)."""
        self.declined_batches = 0
        """Batches offered as acknowledged and left to come once stored (a counter)."""

    async def consume(self, records: Sequence[R], /) -> None:
        """Records stored: add them to their traces."""
        await self._assembly.hand_over(functools.partial(self._add, records, time.time_ns(), None), len(records))

    def take(self, records: Sequence[R], batch: Hashable, /) -> bool:
        """Records acknowledged from the spool, not stored yet: add them now if there is room (``EarlyIntake``)."""
        count = len(records)
        if self._uninserted + count > MAX_UNINSERTED_RECORDS and self._uninserted:
            self.declined_batches += 1
            return False
        if not self._assembly.offer(functools.partial(self._add, records, time.time_ns(), batch), count):
            self.declined_batches += 1
            return False
        self._taken[batch] = count
        self._uninserted += count
        self.early_batches += 1
        return True

    async def inserted(self, batches: Sequence[Hashable], /) -> Collection[Hashable]:
        """These batches are stored: release the runs held for them; returns those this intake took."""
        taken = [batch for batch in batches if batch in self._taken]
        if taken:
            for batch in taken:
                self._uninserted -= self._taken.pop(batch)
            await self._assembly.hand_over(functools.partial(self._assembly.assembler.batches_inserted, taken), 0)
        return taken


class StoredSpans(_Intake[SpanRecord]):
    """``Consumer[Sequence[SpanRecord]]`` and ``EarlyIntake``: spans into the assembler's open traces."""

    def __init__(self, assembly: AssemblyThread) -> None:
        super().__init__(assembly, assembly.assembler.add_spans)


class StoredLogs(_Intake[LogRecord]):
    """The same for GenAI log records: content some SDKs log beside the span (prompts, answers) joins its run."""

    def __init__(self, assembly: AssemblyThread) -> None:
        super().__init__(assembly, assembly.assembler.add_logs)
