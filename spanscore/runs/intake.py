"""Stored spans and logs into the run assembler: what the span and log writers hand on after an insert.

Spans reach the assembler only once they are stored, so a run that is scored is always a run that can
be read back (recovery, the run page, backfill all read storage). The batch is handed to the assembler's
own thread (``AssemblyThread``), stamped with the time it arrived: the event loop does not assemble.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from spanscore.records import LogRecord, SpanRecord
from spanscore.runs.assembly_thread import AssemblyThread
from spanscore.runs.sizes import log_bytes, span_bytes

T = TypeVar("T")


class StoredSpans:
    """``Consumer[Sequence[SpanRecord]]``: adds stored spans to the assembler's open traces, on its thread."""

    def __init__(self, assembly: AssemblyThread) -> None:
        self._assembly = assembly

    async def consume(self, spans: Sequence[SpanRecord], /) -> None:
        add = functools.partial(self._assembly.assembler.add_spans, spans, time.time_ns())
        await self._assembly.hand_over(add, len(spans), sampled_size(spans, span_bytes))


class StoredLogs:
    """``Consumer[Sequence[LogRecord]]``: content some SDKs log beside the span (prompts, answers) joins its run."""

    def __init__(self, assembly: AssemblyThread) -> None:
        self._assembly = assembly

    async def consume(self, logs: Sequence[LogRecord], /) -> None:
        add = functools.partial(self._assembly.assembler.add_logs, logs, time.time_ns())
        await self._assembly.hand_over(add, len(logs), sampled_size(logs, log_bytes))


SIZE_SAMPLES = 32
"""Records of a batch whose size is estimated on the event loop; the rest are counted at their mean."""


def sampled_size(records: Sequence[T], size: Callable[[T], int]) -> int:
    """Estimated bytes of ``records`` from an evenly spread sample: the loop does not size every record.

    The assembler's own bounds size every record, on its thread; this is only for the queue in front of it.
    """
    if not records:
        return 0
    step = max(1, len(records) // SIZE_SAMPLES)
    sample = records[::step]
    return sum(map(size, sample)) * len(records) // len(sample)
