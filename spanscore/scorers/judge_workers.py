"""Judge calls in worker processes: litellm's CPU cost off the service's event loop and spread over cores.

One ``litellm.acompletion`` costs 7 to 10 ms of CPU (the openai SDK's request
transformation, litellm's logging payload and pricing, a thread-pool hop).
On the service's single event loop that caps judgements per second and adds
latency to everything else the loop serves. ``WorkerPoolTransport`` runs N
child processes (``python -m spanscore.scorers.judge_workers``), each with its
own event loop and litellm, and sends them requests as JSON lines over
stdin/stdout; each worker runs its requests concurrently and answers in any
order, matched by id. The client keeps every decision (limits, breaker,
ladder, retries, validation, tracing) in the parent; workers only call.

A worker that dies fails its in-flight calls as transient (the client
retries them) and is replaced on the next call. Workers exit when their stdin
closes, so they never outlive the parent. Use the pool from a long-lived
event loop (the service); ``Scorer.run`` with its loop per call should keep
the in-process transport.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import json
import sys
from dataclasses import asdict
from typing import Any

from spanscore.scorers.judge_resilience import Failure
from spanscore.scorers.judge_transport import CallFailed, Reply, call_litellm

_LINE_LIMIT = 64 * 1024 * 1024  # prompts with large contexts travel as one line


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
    """Sends each call to the least busy of ``processes`` worker processes."""

    def __init__(self, processes: int = 2) -> None:
        if processes < 1:
            raise ValueError(f"a judge worker pool needs at least 1 process, got {processes}")
        self.processes = processes
        self._workers: list[_Worker] = []
        self._lock: asyncio.Lock | None = None

    async def start(self) -> None:
        """Start (or replace dead) workers and wait until each has imported litellm."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            self._workers = [w for w in self._workers if w.alive]
            while len(self._workers) < self.processes:
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "spanscore.scorers.judge_workers",
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    limit=_LINE_LIMIT,
                )
                self._workers.append(_Worker(process))
            await asyncio.gather(*(asyncio.shield(w.ready) for w in self._workers))

    async def complete(self, kwargs: dict[str, Any], *, structured: bool) -> Reply:
        if len(self._workers) < self.processes or not all(w.alive for w in self._workers):
            await self.start()
        worker = min(self._workers, key=lambda w: len(w.pending))
        return await worker.call(kwargs, structured)

    async def shutdown(self) -> None:
        workers, self._workers = self._workers, []
        await asyncio.gather(*(w.stop() for w in workers))


async def _answer(message: dict[str, Any], out: Any) -> None:
    try:
        reply = await call_litellm(message["kwargs"], structured=message["structured"])
        answer: dict[str, Any] = {"id": message["id"], "ok": True, "reply": asdict(reply)}
    except Exception as exc:  # a failure outside litellm's call still has to answer, or the caller waits
        failed = (
            exc
            if isinstance(exc, CallFailed)
            else CallFailed(
                Failure.PERMANENT,
                f"judge worker: {type(exc).__name__}: {exc}",
                error_type=type(exc).__name__,
                retry_after=None,
            )
        )
        answer = {
            "id": message["id"],
            "ok": False,
            "failure": failed.failure.value,
            "message": str(failed),
            "error_type": failed.error_type,
            "retry_after": failed.retry_after,
        }
    out.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
    out.flush()


class _InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs submitted work at once on the calling thread.

    litellm hands the synchronous half of every ``acompletion`` (parameter mapping, no I/O) to the
    loop's default executor; in a worker whose loop does nothing else, the hop to a thread and the
    GIL hand-offs back cost about 30% of a call's CPU. The price: a blocking DNS lookup (rare:
    aiohttp caches them) stalls this worker's other calls for its duration, never the service.
    """

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting coroutine, as a thread would
            future.set_exception(exc)
        return future


async def _serve() -> None:
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but protocol lines may reach the parent's pipe
    loop = asyncio.get_running_loop()
    loop.set_default_executor(_InlineExecutor(max_workers=1))
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out.write(b'{"ready":true}\n')
    out.flush()
    tasks: set[asyncio.Task[None]] = set()
    while line := await reader.readline():
        task = asyncio.create_task(_answer(json.loads(line), out))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(_serve())
