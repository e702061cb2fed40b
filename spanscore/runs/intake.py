"""Stored spans and logs into the run assembler: what the span and log writers hand on after an insert.

Spans reach the assembler only once they are stored, so a run that is scored is always a run that can
be read back (recovery, the run page, backfill all read storage). The batch is handed to the assembler's
own thread (``AssemblyThread``), stamped with the time it arrived: the event loop does not assemble.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence

from spanscore.records import LogRecord, SpanRecord
from spanscore.runs.assembly_thread import AssemblyThread


class StoredSpans:
    """``Consumer[Sequence[SpanRecord]]``: adds stored spans to the assembler's open traces, on its thread."""

    def __init__(self, assembly: AssemblyThread) -> None:
        self._assembly = assembly

    async def consume(self, spans: Sequence[SpanRecord], /) -> None:
        add = functools.partial(self._assembly.assembler.add_spans, spans, time.time_ns())
        await self._assembly.hand_over(add, len(spans))


class StoredLogs:
    """``Consumer[Sequence[LogRecord]]``: content some SDKs log beside the span (prompts, answers) joins its run."""

    def __init__(self, assembly: AssemblyThread) -> None:
        self._assembly = assembly

    async def consume(self, logs: Sequence[LogRecord], /) -> None:
        add = functools.partial(self._assembly.assembler.add_logs, logs, time.time_ns())
        await self._assembly.hand_over(add, len(logs))
