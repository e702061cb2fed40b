"""A shutdown out of time names the runs whose scoring jobs it cut, running or queued (a fleet's note lists them)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from spanscore.run import Run
from spanscore.scorers.base import StepContext, create_scorer
from spanscore.scoring.config import ScoringConfig
from spanscore.scoring.workers import ScoringJob, ScoringWorkers

_stuck = asyncio.Event()


async def _never(context: StepContext) -> float:
    await _stuck.wait()  # a judge that does not answer
    return 0.5


class _Ended:
    def __init__(self) -> None:
        self.jobs: list[ScoringJob[None]] = []

    async def consume(self, job: ScoringJob[None], /) -> None:
        self.jobs.append(job)


def _run(number: int, target: str = "run") -> Run:
    trace = f"{number:032x}"
    return Run("question", "answer", trace_id=trace, span_id=trace[:16], run_id=f"run-{number}", target=target)


async def test_the_jobs_a_shutdown_cut_are_named_by_trace() -> None:
    scorer = create_scorer("never", kind="llm").generate_score(_never)
    ended = _Ended()
    workers: ScoringWorkers[None] = ScoringWorkers(ended, ScoringConfig(workers=1, queue_size=10))
    await workers.start()
    runs: Sequence[Run] = [_run(1), _run(2), _run(3, target="session"), _run(2)]
    for run in runs:
        await workers.submit(ScoringJob("rule", scorer, run, context=None))
    await asyncio.sleep(0.05)  # the first job is running, the others wait
    await asyncio.wait_for(workers.shutdown(within_s=0.1), 10)
    # Running and queued, each trace once; a session's is left out (its successor reads sessions from the store).
    assert workers.cut == [f"{1:032x}", f"{2:032x}"]
    assert ended.jobs == []
    await workers.start()
    assert workers.cut == []
    await workers.shutdown(within_s=0.1)
