"""The scoring worker pool: a bounded queue of jobs, a fixed number of asyncio workers.

Each job moves through explicit states: ``pending`` (queued) -> ``running`` ->
``succeeded`` | ``retrying`` -> ... | ``failed`` | ``skipped``. Only a result
marked retryable (judge timeouts, 429/5xx, storage hiccups) is retried, with
exponential backoff and full jitter; the terminal result is handed on only once
retries are exhausted, so a retry never writes a half-finished score. Code
scorers run in worker processes under a deadline (``code_pool``), so a slow or
stuck one never holds the service's interpreter lock; LLM scorers are awaited
and rely on the judge client's own concurrency limits.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from spanscore.pipeline import Consumer
from spanscore.redaction.redactor import Redactor
from spanscore.redaction.scope import under_policy
from spanscore.run import Run
from spanscore.scorers.base import Scorer, ScoreResult, Status
from spanscore.scoring.code_pool import CodeScorerPool
from spanscore.scoring.config import ScoringConfig

log = logging.getLogger(__name__)


class JobState(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    RETRYING = "retrying"
    FAILED = "failed"
    SKIPPED = "skipped"


TERMINAL = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.SKIPPED})


C = TypeVar("C")
"""The caller's bookkeeping a job carries; the pool never looks at it."""


@dataclass(slots=True)
class ScoringJob(Generic[C]):
    """One scorer on one run for one rule; ``context`` is the caller's, typed, and opaque to the pool."""

    rule: str
    scorer: Scorer
    run: Run
    context: C
    state: JobState = JobState.PENDING
    attempts: int = 0
    result: ScoreResult | None = None
    counted: bool = False
    created_at: float = field(default_factory=time.monotonic)
    redactor: Redactor | None = None
    """The rule's redaction policy for what its judges are sent (None: every built-in detector)."""


class ScoringWorkers(Generic[C]):
    """``submit`` waits while the queue is full: backpressure reaches the readiness loop, not memory."""

    def __init__(
        self,
        finished: Consumer[ScoringJob[C]],
        config: ScoringConfig,
        *,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
    ) -> None:
        self._drain_timeout = config.drain_timeout_s
        self._finished = finished
        """The next stage: each job once it ended, with its ``result`` set."""
        self._queue: asyncio.Queue[ScoringJob[C]] = asyncio.Queue(maxsize=config.queue_size)
        self._workers = config.workers
        self._max_attempts = config.max_attempts
        self._backoff_base = backoff_base_s
        self._backoff_max = backoff_max_s
        self.code = CodeScorerPool(config.code_processes, config.code_timeout_s)
        self._tasks: list[asyncio.Task[None]] = []
        self.states: Counter[str] = Counter()
        self.completed_per_rule: Counter[str] = Counter()
        self.redactions: Counter[tuple[str, str]] = Counter()
        """Values masked before a judge call, per (rule, detector), over every attempt (/metrics)."""
        self._running: dict[int, ScoringJob[C]] = {}
        """Jobs a worker has taken, by ``id``."""
        self.cut: list[str] = []
        """Trace ids of runs (not sessions) whose jobs the last shutdown cut, running or queued: sampled, unscored."""

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    async def start(self) -> None:
        self.cut = []
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._work(), name=f"scorer-{i}") for i in range(self._workers)]

    async def submit(self, job: ScoringJob[C]) -> None:
        self._move(job, JobState.PENDING)
        await self._queue.put(job)

    async def drain(self) -> None:
        """Wait until every queued job reached a terminal state."""
        await self._queue.join()

    async def shutdown(self, within_s: float | None = None) -> None:
        """Finish queued jobs (for ``within_s``, by default ``drain_timeout_s``), then stop the workers; idempotent."""
        if self._tasks:
            try:
                await asyncio.wait_for(self._queue.join(), self._drain_timeout if within_s is None else within_s)
            except TimeoutError:
                log.warning("scoring queue not drained at shutdown pending=%d", self._queue.qsize())
                cut = [*self._running.values(), *self._queue._queue]  # type: ignore[attr-defined]  # the queued jobs, in order
                self.cut = list(dict.fromkeys(job.run.trace_id for job in cut if job.run.target != "session"))
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._tasks = []
        await self.code.shutdown()

    def _move(self, job: ScoringJob[C], state: JobState) -> None:
        """Counts: jobs now in each live state, and jobs ever ended in each terminal state."""
        if job.counted:
            self.states[job.state] -= 1
        self.states[state] += 1
        job.state = state
        job.counted = state not in TERMINAL

    async def _work(self) -> None:
        while True:
            job = await self._queue.get()
            self._running[id(job)] = job
            try:
                await self._run_job(job)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("scoring job crashed rule=%s scorer=%s", job.rule, job.scorer.info.id)
            finally:
                self._running.pop(id(job), None)
                self._queue.task_done()

    async def _run_job(self, job: ScoringJob[C]) -> None:
        while True:
            job.attempts += 1
            self._move(job, JobState.RUNNING)
            result = await self._score(job)
            if result.status is Status.ERROR and result.retryable and job.attempts < self._max_attempts:
                self._move(job, JobState.RETRYING)
                delay = random.uniform(0, min(self._backoff_max, self._backoff_base * 2 ** (job.attempts - 1)))
                # A judge that named its recovery time (Retry-After, an open breaker) is not asked sooner.
                delay = max(delay, min(self._backoff_max, result.retry_after))
                await asyncio.sleep(delay)
                continue
            job.result = result
            self._move(job, JobState.FAILED if result.status is Status.ERROR else JobState.SUCCEEDED)
            self.completed_per_rule[job.rule] += 1
            await self._finished.consume(job)
            return

    async def _score(self, job: ScoringJob[C]) -> ScoreResult:
        if job.scorer.info.kind == "code":
            return await self.code.score(job.scorer, job.run)
        if job.redactor is None:
            result = await job.scorer.arun(job.run)
        else:
            with under_policy(job.redactor):
                result = await job.scorer.arun(job.run)
        for detector, count in result.redactions.items():
            self.redactions[job.rule, detector] += count
        return result
