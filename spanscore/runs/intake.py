"""Stored spans and logs into the run assembler: what the span and log writers hand on after an insert.

Spans reach the assembler only once they are stored, so a run that is scored is always a run that can
be read back (recovery, the run page, backfill all read storage).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from spanscore.records import LogRecord, SpanRecord
from spanscore.runs.readiness import RunAssembler


class StoredSpans:
    """``Consumer[Sequence[SpanRecord]]``: adds stored spans to the assembler's open traces."""

    def __init__(self, assembler: RunAssembler) -> None:
        self._assembler = assembler

    async def consume(self, spans: Sequence[SpanRecord], /) -> None:
        self._assembler.add_spans(spans, time.time_ns())


class StoredLogs:
    """``Consumer[Sequence[LogRecord]]``: content some SDKs log beside the span (prompts, answers) joins its run."""

    def __init__(self, assembler: RunAssembler) -> None:
        self._assembler = assembler

    async def consume(self, logs: Sequence[LogRecord], /) -> None:
        self._assembler.add_logs(logs, time.time_ns())
