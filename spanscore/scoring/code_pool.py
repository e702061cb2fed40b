"""Code scorers run in a few worker processes, each job under a deadline; a stuck worker is killed.

A code scorer is Python in the service's process if it runs in a thread, and one that gets stuck in a
backtracking regular expression (or any C call that keeps the interpreter lock) freezes every receiver,
the API and the signal handlers with it: a 48 KB answer once held ``/healthz`` for 12 s, and SIGTERM
went unanswered for a minute. In a worker process, a stuck scorer costs one core and one job.

- ``processes`` workers (``scoring.code_processes``, 2 by default) start on the first code job, each
  a fresh interpreter (``python -m spanscore.scoring.code_worker``), never a fork of this threaded
  process; each builds each scorer once, by the name and options ``registry.build`` made it from.
- Jobs wait in one queue; an idle worker takes what waits, up to ``MAX_BATCH`` and its share with the other
  workers, in one message, and answers each job as soon as it is done. One job per message cost the service
  about 115 µs of CPU per job in pickling, pipes and the event loop, half of what ``answer_health`` (the
  default rule's scorer) costs in the worker, and left the worker idle between jobs: 1,900 jobs/s on two
  workers where the scorer alone runs 4,700/s (session 29).
- A job's deadline (``scoring.code_timeout_s``) runs from the moment its worker starts it (when the job
  before it in the message was answered). Past it, the worker is killed (SIGKILL: a process stuck in C code
  ignores anything gentler), a new one is started, and the job ends with an ``error`` result that says it
  timed out. The job is not retried: a scorer that ran out of time on a run will do so again. The jobs
  behind it in the same message go back to the front of the queue.
- A worker that dies mid-job (a crash, the OOM killer) fails that job the same way and is replaced; the jobs
  behind it go back to the queue. A job cancelled while its worker runs it (shutdown) also costs the worker,
  since nothing else stops a scorer that does not return; one cancelled before its turn is answered and the
  answer dropped.

``score`` never raises except on cancellation: whatever happens, the job gets a result.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import pickle
import sys
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
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
        await self.send(message)
        return await self.receive()

    async def send(self, message: Any) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(frame(message))
            await stdin.drain()
        except ConnectionError as exc:
            code = await self.process.wait()
            raise WorkerGone(f"the code scorer worker exited (code {code})") from exc

    async def receive(self) -> Any:
        stdout = self.process.stdout
        assert stdout is not None
        try:
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


MAX_BATCH = 32
"""Jobs sent to a worker in one message at most (each still answered, and timed, on its own)."""


@dataclass(eq=False, slots=True)
class _Job:
    scorer: Scorer
    run: Run
    future: asyncio.Future[ScoreResult]
    name: str
    """The scorer's name and options as ``registry.build`` made it: what the worker builds it from."""
    options: Mapping[str, Any]


class CodeScorerPool:
    """``await pool.score(scorer, run)``: the scorer's result, computed in a worker under the deadline."""

    def __init__(self, processes: int, timeout_s: float, max_batch: int = MAX_BATCH) -> None:
        self.processes = processes
        self.timeout_s = timeout_s
        self.max_batch = max_batch
        self.timed_out = 0
        """Jobs cut at their deadline (their worker killed)."""
        self.workers_lost = 0
        """Workers that died mid-job, or were killed because their job was cancelled."""
        self.workers_started = 0
        self._queue: deque[_Job] = deque()
        self._waiting: asyncio.Event | None = None
        """Set while jobs wait in the queue."""
        self._workers: set[_Worker] = set()
        self._running: dict[_Worker, _Job] = {}
        """The job each busy worker runs now (a cancelled one kills its worker)."""
        self._slots: set[asyncio.Task[None]] = set()
        self._closed = False

    def pids(self) -> list[int]:
        """Process ids of the running workers (for monitoring their CPU and memory)."""
        return [worker.process.pid for worker in self._workers if worker.process.returncode is None]

    async def score(self, scorer: Scorer, run: Run) -> ScoreResult:
        if scorer.origin is None:
            return _failed(scorer, run, "the scorer was not made by spanscore.scorers.build, so no worker can make it")
        if self._waiting is None:
            self._waiting = asyncio.Event()
            for _ in range(self.processes):
                task = asyncio.get_running_loop().create_task(self._slot())
                self._slots.add(task)
                task.add_done_callback(self._slots.discard)
        name, options = scorer.origin
        job = _Job(scorer, run, asyncio.get_running_loop().create_future(), name, options)
        self._queue.append(job)
        self._waiting.set()
        return await job.future

    async def _slot(self) -> None:
        """One worker's place: start a process, serve batches, and start another when it had to go."""
        while not self._closed:
            worker = await self._start_one()
            if worker is None:
                return
            busy = False
            try:
                while not self._closed:
                    batch = await self._take()
                    busy = True
                    alive = await self._serve(worker, batch)
                    busy = False
                    if not alive:
                        break
            except asyncio.CancelledError:  # shutdown: an idle worker leaves when its stdin closes
                self._workers.discard(worker)
                await (worker.kill() if busy else worker.stop())
                raise
            self._workers.discard(worker)
            await worker.kill()

    async def _take(self) -> list[_Job]:
        """The jobs waiting, up to ``max_batch`` and this worker's share of them (cancelled ones dropped)."""
        assert self._waiting is not None
        while True:
            while not self._queue:
                self._waiting.clear()
                await self._waiting.wait()
            share = max(1, min(self.max_batch, -(-len(self._queue) // self.processes)))
            batch: list[_Job] = []
            while self._queue and len(batch) < share:
                job = self._queue.popleft()
                if not job.future.done():
                    batch.append(job)
            if batch:
                return batch

    async def _serve(self, worker: _Worker, batch: list[_Job]) -> bool:
        """Run ``batch`` on ``worker``, each job under its deadline; whether the worker is still usable."""
        try:
            await worker.send({"jobs": [{"scorer": job.name, "options": job.options, "run": job.run} for job in batch]})
        except Exception:  # it went before it had any of them: they wait for another worker
            self._put_back(batch)
            self.workers_lost += 1
            return False
        for index, job in enumerate(batch):
            self._running[worker] = job
            job.future.add_done_callback(functools.partial(self._cancelled, worker, job))
            started = time.monotonic()
            try:
                async with asyncio.timeout(self.timeout_s):
                    status, value = await worker.receive()
            except TimeoutError:
                self._running.pop(worker, None)
                self.timed_out += 1
                await worker.kill()  # gone before the job's result says so
                self._settle(job, self._timed_out(job, time.monotonic() - started))
                self._put_back(batch[index + 1 :])
                return False
            except Exception as exc:  # the worker died, or its answer cannot be read: either way it is done for
                self._running.pop(worker, None)
                self.workers_lost += not job.future.cancelled()  # a cancelled job's kill was counted then
                await worker.kill()
                self._settle(job, _failed(job.scorer, job.run, _gone(exc), error_type="WorkerGone"))
                self._put_back(batch[index + 1 :])
                return False
            finally:
                self._running.pop(worker, None)
            ok = status == "ok" and isinstance(value, ScoreResult)
            self._settle(job, value if ok else _failed(job.scorer, job.run, str(value)))
        return True

    def _timed_out(self, job: _Job, seconds: float) -> ScoreResult:
        log.warning("code scorer timed out scorer=%s run_id=%s timeout_s=%g", job.name, job.run.run_id, self.timeout_s)
        return _failed(
            job.scorer,
            job.run,
            f"the code scorer timed out after scoring.code_timeout_s ({self.timeout_s:g} s); "
            "its worker process was killed and replaced",
            error_type="ScorerTimedOut",
            duration_s=seconds,
        )

    def _cancelled(self, worker: _Worker, job: _Job, future: asyncio.Future[ScoreResult]) -> None:
        """A job cancelled while its worker runs it: only killing the worker stops the scorer."""
        if future.cancelled() and self._running.get(worker) is job and worker.process.returncode is None:
            self.workers_lost += 1
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()

    def _put_back(self, jobs: list[_Job]) -> None:
        """Jobs a worker had and did not start: first in line again, for the next worker."""
        if jobs:
            self._queue.extendleft(reversed(jobs))
            assert self._waiting is not None
            self._waiting.set()

    @staticmethod
    def _settle(job: _Job, result: ScoreResult) -> None:
        if not job.future.done():
            job.future.set_result(result)

    async def _start_one(self) -> _Worker | None:
        """Start a worker; on failure, try again shortly (jobs wait meanwhile). None once the pool is closed."""
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
                return None
            self._workers.add(worker)
            return worker
        return None

    async def shutdown(self) -> None:
        """Stop every worker: idle ones leave when their stdin closes, busy ones are killed; idempotent."""
        self._closed = True
        slots = list(self._slots)
        for task in slots:
            task.cancel()
        await asyncio.gather(*slots, return_exceptions=True)
        while self._queue:
            self._queue.popleft().future.cancel()


def _gone(exc: BaseException) -> str:
    if isinstance(exc, WorkerGone):
        return f"{exc} while scoring"
    return f"the worker's answer could not be read: {exc}"


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
