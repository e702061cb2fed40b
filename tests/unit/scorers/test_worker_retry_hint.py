"""A retried scoring job waits at least as long as the judge asked (Retry-After, open breaker)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

from spanscore.run import Run
from spanscore.scorers.base import ScoreResult, Status
from spanscore.scoring.config import ScoringConfig
from spanscore.scoring.workers import ScoringJob, ScoringWorkers


class _HintedJudgeScorer:
    """Fails once with a retry hint, then succeeds; remembers when it was called."""

    info = SimpleNamespace(id="hinted", kind="llm")

    def __init__(self, hint_s: float) -> None:
        self.hint_s = hint_s
        self.calls: list[float] = []

    async def arun(self, run: Run) -> ScoreResult:
        self.calls.append(time.monotonic())
        if len(self.calls) == 1:
            return ScoreResult(
                "hinted", "1", Status.ERROR, error="judge said 429", retryable=True, retry_after=self.hint_s
            )
        return ScoreResult("hinted", "1", Status.OK, score=1.0)


async def test_the_retry_waits_for_the_judges_hint_not_just_the_backoff() -> None:
    scorer = _HintedJudgeScorer(hint_s=0.4)
    done: asyncio.Future[ScoreResult] = asyncio.get_running_loop().create_future()

    class Finished:
        """The next stage, as every stage is handed work: a ``Consumer`` of ended jobs (#27)."""

        async def consume(self, job: ScoringJob[None], /) -> None:
            assert job.result is not None
            done.set_result(job.result)

    workers: ScoringWorkers[None] = ScoringWorkers(
        Finished(), ScoringConfig(workers=1), backoff_base_s=0.001, backoff_max_s=5.0
    )
    await workers.start()
    try:
        run = Run(trace_id="ab" * 16, span_id="cd" * 8)
        await workers.submit(ScoringJob("rule", scorer, run, None))  # type: ignore[arg-type]
        result = await asyncio.wait_for(done, 10)
    finally:
        await workers.shutdown()
    assert result.status is Status.OK and len(scorer.calls) == 2
    assert scorer.calls[1] - scorer.calls[0] >= 0.35  # the backoff alone would be about a millisecond
