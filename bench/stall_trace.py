"""Where a small export's time goes while a large one is being handled: timestamps from inside the service.

``bench.decode_stall`` runs the service in its own process, so it can wrap a few of the service's own
functions with timers without changing them: the JSON -> protobuf step of a large body (worker process),
the decode step (decode thread or event loop), each ``consume`` into the span writer (how long a request
waits for its acknowledgement: group commit plus insert or spool fsync) and each flush of the writer's
group commit (its size and how long the insert or spool write took). Each small probe is then labelled
with the phase of the large export it started in, so the percentiles can be split by phase.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench.load import percentile

LARGE_RECORDS = 1000
"""A consume or flush of at least this many records belongs to the large export (probes carry one span)."""
LARGE_BYTES = 64 << 10
"""A body past this size is decoded off the event loop (``ingest.INLINE_DECODE_BYTES``): the large export's."""
_BYTE_STEPS = ("json_to_protobuf", "decode")


@dataclass(slots=True)
class Interval:
    name: str
    start: float
    end: float
    size: int

    def as_dict(self, origin: float) -> dict[str, Any]:
        return {"name": self.name, "start_ms": round((self.start - origin) * 1000, 1),
                "ms": round((self.end - self.start) * 1000, 1), "size": self.size}  # fmt: skip


@dataclass(slots=True)
class PhaseLog:
    """Intervals recorded by the wrapped service functions, in ``time.perf_counter`` seconds."""

    intervals: list[Interval] = field(default_factory=list)

    def timed(self, name: str, function: Callable[..., Awaitable[Any]], size: Callable[..., int]) -> Any:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await function(*args, **kwargs)
            finally:
                self.intervals.append(Interval(name, start, time.perf_counter(), size(*args, **kwargs)))

        return wrapper

    def large(self) -> list[Interval]:
        """The large export's own steps, in order."""
        return [i for i in self.intervals if i.size > (LARGE_BYTES if i.name in _BYTE_STEPS else LARGE_RECORDS)]

    def phase_at(self, moment: float) -> str:
        """The large export's step running at ``moment`` ('after' once its acknowledgement wait ended)."""
        for interval in self.large():
            if interval.name != "flush" and interval.start <= moment < interval.end:
                return interval.name
        return "before" if all(moment < i.start for i in self.large()) else "after"

    def watch_gc(self) -> Callable[[], None]:
        """Record every garbage collection as an interval named ``gc<generation>``; returns the undo."""
        started: list[float] = []

        def callback(phase: str, info: dict[str, Any]) -> None:
            if phase == "start":
                started[:] = [time.perf_counter()]
            elif started:
                self.intervals.append(Interval(f"gc{info['generation']}", started[0], time.perf_counter(), 0))

        gc.callbacks.append(callback)
        return lambda: gc.callbacks.remove(callback)

    def small_flushes(self) -> list[float]:
        """Milliseconds of each group-commit write of small exports only (insert, or spool append and fsync)."""
        return [(i.end - i.start) * 1000 for i in self.intervals if i.name == "flush" and i.size < LARGE_RECORDS]

    def gc_pauses(self, generation: int) -> list[float]:
        return [(i.end - i.start) * 1000 for i in self.intervals if i.name == f"gc{generation}"]

    def overlapping(self, start: float, end: float) -> list[str]:
        """Names of the recorded steps (large export steps, garbage collections) that overlap ``[start, end)``."""
        found = []
        for interval in self.intervals:
            is_large = interval in self.large()
            if (is_large or interval.name.startswith("gc2")) and interval.start < end and interval.end > start:
                found.append(f"{interval.name}({(interval.end - interval.start) * 1000:.0f}ms)")
        return found

    def small_waits(self) -> list[float]:
        """Milliseconds each small export spent in the span writer's ``consume`` (its acknowledgement wait)."""
        return [(i.end - i.start) * 1000 for i in self.intervals if i.name == "wait_for_ack" and i.size < LARGE_RECORDS]


def install(service: Any, phases: PhaseLog) -> None:
    """Wrap the service's ingest steps and span writer with timers (the service object only, nothing global)."""
    workers = service.ingest.workers
    workers.as_protobuf = phases.timed(
        "json_to_protobuf", workers.as_protobuf, lambda body, json_body, signal: len(body) if json_body else 0
    )
    workers.off_loop = phases.timed("decode", workers.off_loop, lambda size, work: size)
    writer = service.span_writer
    writer.consume = phases.timed("wait_for_ack", writer.consume, lambda records: len(records))
    batcher = writer._batcher
    batcher._sink = phases.timed("flush", batcher._sink, lambda records: len(records))


def summary(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50": round(percentile(values, 0.5), 1), "p99": round(percentile(values, 0.99), 1),
            "max": round(max(values, default=0.0), 1)}  # fmt: skip
