"""Judge calls in worker processes: litellm's CPU cost off the service's event loop and spread over cores.

One ``litellm.acompletion`` costs 4 to 6 ms of CPU on the 2-core build
machine (request preparation, HTTP through httpx and aiohttp, pricing, the
logging payload litellm always builds; docs/judge.md has the breakdown). On
the service's single event loop that caps judgements per second at one core
and adds latency to everything else the loop serves. ``WorkerPoolTransport``
runs N child processes (``python -m spanscore.scorers.judge.worker_main``), each
with its own event loop and litellm, and sends them requests as JSON lines
over stdin/stdout; each worker runs its requests concurrently and answers in
any order, matched by id. The client keeps every decision (limits, breaker,
ladder, retries, validation, tracing) in the parent; workers only call.

A worker that dies fails its in-flight calls as transient (the client
retries them) and is replaced on the next call. Workers exit when their stdin
closes, so they never outlive the parent. A pool serves the event loop that
started it; calls from other loops (``Scorer.run`` starts one per call) run
in-process. ``AutoTransport``, the default (``judge.worker_processes: auto``),
judges in-process and starts a pool only once judge calls on one loop
sustain a rate where litellm takes a real share of a core.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from spanscore.scorers.judge.resilience import Failure
from spanscore.scorers.judge.transport import CallFailed, InProcessTransport, Reply, Transport, call_litellm

logger = logging.getLogger(__name__)

LINE_LIMIT = 64 * 1024 * 1024  # prompts with large contexts travel as one line
AUTO_RATE = 40.0  # judge calls per second on one loop (about a quarter of a core of litellm) that start a pool
AUTO_WINDOW_S = 5.0  # over this long, so a burst or a test does not start processes
AUTO_MAX_PROCESSES = 4
_AUTO_RETRY_S = 60.0


class _Worker:
    """One child process and the calls waiting for its answers."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.pending: dict[int, asyncio.Future[Reply]] = {}
        self.ready = asyncio.get_running_loop().create_future()
        self._ids = itertools.count()
        self._reader = asyncio.create_task(self._read())

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and not self._reader.done()

    async def call(self, kwargs: dict[str, Any], structured: bool) -> Reply:
        await asyncio.shield(self.ready)
        call_id = next(self._ids)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self.pending[call_id] = future
        try:
            assert self.process.stdin is not None
            line = json.dumps({"id": call_id, "kwargs": kwargs, "structured": structured}, separators=(",", ":"))
            self.process.stdin.write(line.encode() + b"\n")
            await self.process.stdin.drain()
            return await future
        except (ConnectionError, BrokenPipeError) as exc:
            gone = CallFailed(Failure.TRANSIENT, f"judge worker gone: {exc}", error_type="WorkerGone", retry_after=None)
            raise gone from exc
        finally:
            self.pending.pop(call_id, None)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        try:
            while line := await self.process.stdout.readline():
                try:
                    message = json.loads(line)
                except ValueError:  # a library printed to stdout before the worker redirected it
                    continue
                if isinstance(message, dict):
                    self._deliver(message)
        finally:
            gone = CallFailed(Failure.TRANSIENT, "judge worker exited", error_type="WorkerGone", retry_after=None)
            if not self.ready.done():
                self.ready.set_exception(gone)
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(gone)

    def _deliver(self, message: dict[str, Any]) -> None:
        if message.get("ready"):
            if not self.ready.done():
                self.ready.set_result(None)
            return
        future = self.pending.get(message.get("id", -1))
        if future is None or future.done():
            return  # the caller gave up (timeout, cancellation); the late answer is dropped
        if message["ok"]:
            future.set_result(Reply(**message["reply"]))
        else:
            future.set_exception(
                CallFailed(
                    Failure(message["failure"]),
                    message["message"],
                    error_type=message["error_type"],
                    retry_after=message["retry_after"],
                )
            )

    async def stop(self) -> None:
        if self.process.returncode is None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), timeout=5)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


class WorkerPoolTransport:
    """Sends each call to the least busy of ``processes`` worker processes.

    The pool belongs to the event loop that started it; a call made from any other loop (``Scorer.run``
    starts one per call) runs litellm in this process instead.
    """

    def __init__(self, processes: int = 2) -> None:
        if processes < 1:
            raise ValueError(f"a judge worker pool needs at least 1 process, got {processes}")
        self.processes = processes
        self._workers: list[_Worker] = []
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        """Start (or replace dead) workers and wait until each has imported litellm."""
        if self._lock is None:
            self._lock = asyncio.Lock()
            self._loop = asyncio.get_running_loop()
        async with self._lock:
            self._workers = [w for w in self._workers if w.alive]
            while len(self._workers) < self.processes:
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "spanscore.scorers.judge.worker_main",
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    limit=LINE_LIMIT,
                )
                self._workers.append(_Worker(process))
            await asyncio.gather(*(asyncio.shield(w.ready) for w in self._workers))

    def pids(self) -> list[int]:
        """Process ids of the running workers (for monitoring their CPU and memory)."""
        return [w.process.pid for w in self._workers if w.alive]

    async def complete(self, kwargs: dict[str, Any], *, structured: bool) -> Reply:
        if self._loop is not None and self._loop is not asyncio.get_running_loop():
            return await call_litellm(kwargs, structured=structured)
        if len(self._workers) < self.processes or not all(w.alive for w in self._workers):
            await self.start()
        worker = min(self._workers, key=lambda w: len(w.pending))
        return await worker.call(kwargs, structured)

    async def shutdown(self) -> None:
        workers, self._workers = self._workers, []
        if self._loop is not None and self._loop is not asyncio.get_running_loop():
            _kill(workers)  # their pipes belong to another loop, which may be closed
            return
        await asyncio.gather(*(w.stop() for w in workers))

    def abandon(self) -> None:
        """Terminate the workers without their event loop (it is closed); the pool is unusable afterwards."""
        workers, self._workers = self._workers, []
        _kill(workers)


def _kill(workers: list[_Worker]) -> None:
    for worker in workers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker.process.pid, signal.SIGTERM)


class AutoTransport:
    """litellm in this process until judge calls on one event loop sustain ``rate`` per second, then a pool.

    In-process is cheapest at low rates (no worker memory, no start-up, no pipe hop); at high rates
    litellm's 4 to 7 ms of CPU per call fills the service's event loop, which also serves the OTLP
    receivers, and holds judging to one core. So the rate of calls started on one loop is measured over
    ``window_s``; when it reaches ``rate``, a :class:`WorkerPoolTransport` of ``processes`` workers is
    started in the background and, once ready, takes every later call made from that loop. Calls from
    other loops (``Scorer.run`` starts one per call, which never sustains a rate) stay in-process. A pool
    whose loop has closed is terminated and the measurement starts again on the next loop.
    """

    def __init__(
        self,
        *,
        processes: int,
        rate: float = AUTO_RATE,
        window_s: float = AUTO_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.processes = processes
        self._rate = rate
        self._window_s = window_s
        self._clock = clock
        self._pool: WorkerPoolTransport | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._ready = False
        self._starting: asyncio.Task[None] | None = None
        self._window_loop: asyncio.AbstractEventLoop | None = None
        self._window_start = 0.0
        self._window_calls = 0
        self._retry_at = 0.0

    @property
    def pool(self) -> WorkerPoolTransport | None:
        """The worker pool once it has taken over calls, else None."""
        return self._pool if self._ready else None

    async def complete(self, kwargs: dict[str, Any], *, structured: bool) -> Reply:
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._pool_loop is not loop and self._pool_loop_closed():
            self._pool.abandon()
            self._reset()
        if self._pool is not None and self._ready and self._pool_loop is loop:
            return await self._pool.complete(kwargs, structured=structured)
        if self._pool is None:
            self._count(loop)
        return await call_litellm(kwargs, structured=structured)

    def _pool_loop_closed(self) -> bool:
        return self._pool_loop is None or self._pool_loop.is_closed()

    def _count(self, loop: asyncio.AbstractEventLoop) -> None:
        now = self._clock()
        if loop is not self._window_loop:
            self._window_loop, self._window_start, self._window_calls = loop, now, 0
        self._window_calls += 1
        elapsed = now - self._window_start
        if elapsed < self._window_s:
            return
        rate = self._window_calls / elapsed
        self._window_start, self._window_calls = now, 0
        if rate >= self._rate and now >= self._retry_at:
            logger.info(
                "judge calls at %.0f/s on one event loop: moving litellm to %d worker processes", rate, self.processes
            )
            pool = WorkerPoolTransport(self.processes)
            self._pool, self._pool_loop = pool, loop
            self._starting = loop.create_task(self._bring_up(pool))

    async def _bring_up(self, pool: WorkerPoolTransport) -> None:
        try:
            await pool.start()
        except Exception as exc:  # cannot start processes here: keep judging in-process, try again later
            logger.warning("judge worker processes did not start, judging stays in-process: %s", exc)
            await pool.shutdown()
            if self._pool is pool:
                self._reset()
                self._retry_at = self._clock() + _AUTO_RETRY_S
            return
        if self._pool is pool:
            self._ready = True

    def _reset(self) -> None:
        self._pool = self._pool_loop = self._starting = self._window_loop = None
        self._ready = False
        self._window_calls = 0

    async def shutdown(self) -> None:
        pool, pool_loop, starting = self._pool, self._pool_loop, self._starting
        self._reset()
        if pool is None:
            return
        if pool_loop is not asyncio.get_running_loop():
            pool.abandon()
            return
        if starting is not None and not starting.done():
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
        await pool.shutdown()


def transport_for(workers: int | str) -> Transport:
    """The transport a ``worker_processes`` setting asks for: 0 in-process, N a pool, ``auto`` see AutoTransport."""
    if workers == "auto":
        cores = os.cpu_count() or 1
        if cores < 2:  # one core: worker processes cannot add capacity, only a pipe hop
            return InProcessTransport()
        return AutoTransport(processes=min(cores, AUTO_MAX_PROCESSES))
    if isinstance(workers, int) and workers > 0:
        return WorkerPoolTransport(workers)
    return InProcessTransport()
