"""The one interface between stages: a ``Consumer`` takes ownership of a batch.

Return means done (for the span writer: durable in storage). ``RetryableError``
means try later, ``PermanentError`` means never. "Not sampled" and similar
outcomes are plain returns, not errors.

The stages are wired in ``server/service.py``:

    receivers -> Ingest -> EvaluationTap -> span/log BatchWriter --stored--> Relay -> StoredSpans (assembler)
    ReadyPoller (assembler, sessions) -> Dispatcher -> ScoringWorkers -> UntilDurable -> score BatchWriter, exporter

Every arrow is a ``Consumer``; the poller is the one place that pulls, because readiness is a
matter of time (a quiet period passing), not of a batch arriving.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class Consumer(Protocol[T_contra]):
    async def consume(self, item: T_contra, /) -> None: ...


class Calling(Generic[T]):
    """A ``Consumer`` that hands each item to an async function: how a store's insert method joins the pipeline.

    An engine's insert is a method of the store, not a stage object; wrapping it here keeps every seam a
    ``Consumer``, so any consumer (a test's, a stage's) can stand in for storage.
    """

    def __init__(self, call: Callable[[T], Awaitable[object]]) -> None:
        self._call = call

    async def consume(self, item: T, /) -> None:
        await self._call(item)


class Relay(Generic[T]):
    """A consumer for a stage that may start later: batches go to whatever is connected now, else nowhere.

    Live scoring starts with the first rules, which may arrive at run time (``PUT /api/v1/rules``), after
    the span writer was built. What passes while nothing is connected is not lost: it is stored, and live
    scoring reads recent traces back from storage when it starts.
    """

    def __init__(self) -> None:
        self._target: Consumer[T] | None = None

    def connect(self, target: Consumer[T] | None) -> None:
        self._target = target

    @property
    def connected(self) -> bool:
        return self._target is not None

    async def consume(self, item: T, /) -> None:
        if self._target is not None:
            await self._target.consume(item)


class FanOut(Generic[T]):
    """Hands each batch to every consumer in order; the first error stops it and propagates."""

    def __init__(self, consumers: Sequence[Consumer[T]]) -> None:
        self._consumers = tuple(consumers)

    async def consume(self, item: T, /) -> None:
        for consumer in self._consumers:
            await consumer.consume(item)


async def first_set(*events: asyncio.Event, timeout_s: float | None = None) -> None:
    """Wait until one of ``events`` is set, or ``timeout_s`` passed (the stages that wait on work or a stop)."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


async def every(
    interval_s: float,
    stopping: asyncio.Event,
    work: Callable[[], Awaitable[object]],
    on_error: Callable[[Exception], None],
    *,
    from_start: bool = False,
) -> None:
    """Run ``work`` now and then every ``interval_s`` until ``stopping`` is set (the stages that pull on a clock).

    The interval is the pause between passes, or with ``from_start`` the time from one pass's start to the next
    (a pass that took longer is followed at once): for a stage whose passes take as long as its interval under
    load, so that what it finds waits at most one interval, not one interval plus a pass.
    A failed pass is handed to ``on_error`` and the next pass runs on time: one bad pass never ends the loop.
    Setting ``stopping`` ends the wait at once, so a stop does not wait out the interval.
    """
    loop = asyncio.get_running_loop()
    while not stopping.is_set():
        started = loop.time()
        try:
            await work()
        except Exception as exc:
            on_error(exc)
        pause = interval_s - (loop.time() - started) if from_start else interval_s
        try:
            await asyncio.wait_for(stopping.wait(), max(pause, 0.0))
        except TimeoutError:
            pass


class Background:
    """A component's one background task: started with the component, stopped by ``stopping`` and awaited.

    The stages that pull on a clock (the ready poller, the feedback resolver, alerts, a fleet member) each own
    one; ``stop`` sets ``stopping`` and waits for the task to see it, so nothing runs after a stop returns.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self, body: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``body()`` as the task (once: a second start while it runs does nothing)."""
        self.stopping.clear()
        if self._task is None:
            self._task = asyncio.create_task(body(), name=self.name)

    async def stop(self) -> None:
        self.stopping.set()
        if self._task is not None:
            try:
                await self._task
            finally:  # also when the stop itself is cancelled (a stop out of time): a later start starts anew
                self._task = None
