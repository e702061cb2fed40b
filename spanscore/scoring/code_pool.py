"""Code scorers run in a few worker processes, each job under a deadline; a stuck worker is killed.

A code scorer is Python in the service's process if it runs in a thread, and one that gets stuck in a
backtracking regular expression (or any C call that keeps the interpreter lock) freezes every receiver,
the API and the signal handlers with it: a 48 KB answer once held ``/healthz`` for 12 s, and SIGTERM
went unanswered for a minute. In a worker process, a stuck scorer costs one core and one job.

- ``processes`` workers (``scoring.code_processes``, 2 by default) start on the first code job, each
  a fresh interpreter (``python -m spanscore.scoring.code_worker``), never a fork of this threaded
  process; each holds one job at a time and builds each scorer once, by the name and options
  ``registry.build`` made it from.
- A job's deadline (``scoring.code_timeout_s``) runs from the moment its worker has it. Past it, the
  worker is killed (SIGKILL: a process stuck in C code ignores anything gentler), a new one is started,
  and the job ends with an ``error`` result that says it timed out. The job is not retried: a scorer that
  ran out of time on a run will do so again.
- A worker that dies mid-job (a crash, the OOM killer) fails that job the same way and is replaced. A
  job cancelled while its worker runs it (shutdown) also costs the worker, since its answer can no
  longer be told apart from the next job's.

``score`` never raises except on cancellation: whatever happens, the job gets a result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import sys
import time
from typing import Any

from spanscore.run import Run
from spanscore.scorers.base import Scorer, ScoreResult, Status
from spanscore.scoring.code_worker import HEADER, frame

log = logging.getLogger(__name__)

_STOP_GRACE_S = 2.0


class WorkerGone(Exception):
    """The worker process ended (or never became ready) before it answered."""


class _Worker:
    """One worker process and its pipes; one job at a time."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls) -> _Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "spanscore.scoring.code_worker",
            str(os.getpid()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        worker = cls(process)
        try:
            if await worker.ask({"path": list(sys.path)}) != "ready":
                raise WorkerGone("the code scorer worker did not say it was ready")
        except BaseException:
            await worker.kill()
            raise
        return worker

    async def ask(self, message: Any) -> Any:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(frame(message))
            await stdin.drain()
            (length,) = HEADER.unpack(await stdout.readexactly(HEADER.size))
            body = await stdout.readexactly(length)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            code = await self.process.wait()
            raise WorkerGone(f"the code scorer worker exited (code {code})") from exc
        return pickle.loads(body)

    async def kill(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        await self.process.wait()

    async def stop(self) -> None:
        """Close its stdin (it exits when idle), and kill it if it does not go within the grace period."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), _STOP_GRACE_S)
        except TimeoutError:
            await self.kill()


class CodeScorerPool:
    """``await pool.score(scorer, run)``: the scorer's result, computed in a worker under the deadline."""

    def __init__(self, processes: int, timeout_s: float) -> None:
        self.processes = processes
        self.timeout_s = timeout_s
        self.timed_out = 0
        """Jobs cut at their deadline (their worker killed)."""
        self.workers_lost = 0
        """Workers that died mid-job, or were killed because their job was cancelled."""
        self.workers_started = 0
        self._idle: asyncio.Queue[_Worker] | None = None
        self._workers: set[_Worker] = set()
        self._spawning: set[asyncio.Task[Any]] = set()
        self._closed = False

    def pids(self) -> list[int]:
        """Process ids of the running workers (for monitoring their CPU and memory)."""
        return [worker.process.pid for worker in self._workers if worker.process.returncode is None]

    async def score(self, scorer: Scorer, run: Run) -> ScoreResult:
        if scorer.origin is None:
            return _failed(scorer, run, "the scorer was not made by spanscore.scorers.build, so no worker can make it")
        if self._idle is None:
            self._idle = asyncio.Queue()
            for _ in range(self.processes):
                self._spawn()
        worker = await self._idle.get()
        started = time.monotonic()
        name, options = scorer.origin
        try:
            async with asyncio.timeout(self.timeout_s):
                status, value = await worker.ask({"scorer": name, "options": options, "run": run})
        except TimeoutError:
            await self._retire(worker)
            self.timed_out += 1
            log.warning("code scorer timed out scorer=%s run_id=%s timeout_s=%g", name, run.run_id, self.timeout_s)
            return _failed(
                scorer,
                run,
                f"the code scorer timed out after scoring.code_timeout_s ({self.timeout_s:g} s); "
                "its worker process was killed and replaced",
                error_type="ScorerTimedOut",
                duration_s=time.monotonic() - started,
            )
        except Exception as exc:  # the worker died, or its answer cannot be read: either way it is done for
            await self._retire(worker)
            self.workers_lost += 1
            if isinstance(exc, WorkerGone):
                return _failed(scorer, run, f"{exc} while scoring", error_type="WorkerGone")
            return _failed(scorer, run, f"the worker's answer could not be read: {exc}", error_type="WorkerGone")
        except asyncio.CancelledError:  # shutdown: the worker's late answer would be read as the next job's
            self.workers_lost += 1
            self._replace(worker)
            raise
        self._idle.put_nowait(worker)
        if status == "ok" and isinstance(value, ScoreResult):
            return value
        return _failed(scorer, run, str(value))

    def _spawn(self) -> None:
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(self._start_one())
        self._spawning.add(task)
        task.add_done_callback(self._spawning.discard)

    async def _start_one(self) -> None:
        """Start a worker and make it idle; on failure, try again shortly (a job waits for a worker meanwhile)."""
        while not self._closed:
            try:
                worker = await _Worker.start()
            except Exception as exc:  # cannot start a process now (fd or memory limits): jobs wait, and we retry
                log.warning("code scorer worker did not start, retrying in 5 s: %s", exc)
                await asyncio.sleep(5.0)
                continue
            self.workers_started += 1
            if self._closed:
                await worker.kill()
                return
            self._workers.add(worker)
            assert self._idle is not None
            self._idle.put_nowait(worker)
            return

    async def _retire(self, worker: _Worker) -> None:
        """Kill ``worker``, wait until it is gone, and start another in its place."""
        self._workers.discard(worker)
        await worker.kill()
        self._spawn()

    def _replace(self, worker: _Worker) -> None:
        """``_retire`` without waiting: kill ``worker`` now, reap it and start another in the background."""
        self._workers.discard(worker)
        if worker.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
        reap = asyncio.get_running_loop().create_task(worker.process.wait())
        self._spawning.add(reap)
        reap.add_done_callback(self._spawning.discard)
        self._spawn()

    async def shutdown(self) -> None:
        """Stop every worker: idle ones leave when their stdin closes, busy ones are killed; idempotent."""
        self._closed = True
        for task in list(self._spawning):
            task.cancel()
        await asyncio.gather(*self._spawning, return_exceptions=True)
        idle: list[_Worker] = []
        while self._idle is not None and not self._idle.empty():
            idle.append(self._idle.get_nowait())
        busy = [worker for worker in self._workers if worker not in idle]
        self._workers = set()
        stopping = [worker.stop() for worker in idle] + [worker.kill() for worker in busy]
        await asyncio.gather(*stopping, return_exceptions=True)


def _failed(scorer: Scorer, run: Run, message: str, *, error_type: str = "", duration_s: float = 0.0) -> ScoreResult:
    """An ``error`` result for a job the pool could not finish; ``error_type`` leads the message as a step's would."""
    return ScoreResult(
        scorer_id=scorer.info.id,
        scorer_version=scorer.info.version,
        status=Status.ERROR,
        error=f"{error_type}: {message}" if error_type else message,
        run_id=run.run_id,
        started_at=time.time() - duration_s,
        duration_ms=duration_s * 1000.0,
    )
