"""Code scorers in worker processes: a stuck one is killed at its deadline, a lost worker is replaced.

Real worker processes, real kills (SIGKILL, from the pool or from the test); the stuck scorer holds the
GIL in a backtracking regular expression, so only killing its process can end it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spanscore.run import Run
from spanscore.scorers import Status, build, create_scorer
from spanscore.scoring.code_pool import CodeScorerPool

STUCK = "tests.e2e.stuck_scorer:stuck"
REPOSITORY = Path(__file__).resolve().parents[3]


@pytest.fixture
async def pool() -> AsyncIterator[CodeScorerPool]:
    started = CodeScorerPool(processes=1, timeout_s=2.0)
    try:
        yield started
    finally:
        await started.shutdown()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().split(") ")[1].startswith("Z")  # exited, not yet reaped


async def test_a_stuck_scorer_is_cut_counted_and_its_worker_replaced(pool: CodeScorerPool) -> None:
    fine = await pool.score(build("completeness"), Run(input="hello world", output="hello there world"))
    assert fine.status is Status.OK and fine.score == 1.0
    (first,) = pool.pids()
    result = await pool.score(build(STUCK), Run(output="stuck"))
    assert result.status is Status.ERROR and not result.retryable
    assert result.error is not None and result.error.startswith("ScorerTimedOut: ")
    assert "scoring.code_timeout_s (2 s)" in (result.error or "")
    assert pool.timed_out == 1 and _gone(first)
    again = await pool.score(build("completeness"), Run(input="hello world", output="hello there world"))
    assert again.status is Status.OK and pool.workers_started == 2 and pool.pids() != [first]


async def test_a_worker_killed_mid_job_fails_that_job_and_the_next_one_is_scored(pool: CodeScorerPool) -> None:
    await pool.score(build("completeness"), Run(input="a b", output="a b"))
    job = asyncio.create_task(pool.score(build(STUCK), Run(output="stuck")))
    await asyncio.sleep(0.5)
    (worker,) = pool.pids()
    os.kill(worker, signal.SIGKILL)
    result = await job
    assert result.status is Status.ERROR and (result.error or "").startswith("WorkerGone: ")
    assert "code -9" in (result.error or "") and pool.workers_lost == 1 and pool.timed_out == 0
    assert (await pool.score(build("completeness"), Run(input="a b", output="a b"))).status is Status.OK


async def test_a_cancelled_job_costs_its_worker_and_shutdown_leaves_no_process(pool: CodeScorerPool) -> None:
    await pool.score(build("completeness"), Run(input="a b", output="a b"))
    (worker,) = pool.pids()
    job = asyncio.create_task(pool.score(build(STUCK), Run(output="stuck")))
    await asyncio.sleep(0.5)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert pool.workers_lost == 1
    await asyncio.sleep(0)  # the kill is sent at once; reaping is the loop's
    replacement = await pool.score(build("completeness"), Run(input="a b", output="a b"))
    assert replacement.status is Status.OK and _gone(worker)
    busy = asyncio.create_task(pool.score(build(STUCK), Run(output="stuck")))
    await asyncio.sleep(0.5)
    running = pool.pids()
    await pool.shutdown()  # a worker stuck mid-job is killed, not waited for
    assert running and all(_gone(pid) for pid in running)
    busy.cancel()
    await asyncio.gather(busy, return_exceptions=True)


async def test_jobs_sent_with_a_stuck_one_are_scored_by_the_next_worker_and_a_cancelled_one_costs_nothing(
    pool: CodeScorerPool,
) -> None:
    """Jobs go to a worker in batches: the ones behind a job that timed out were never started, so they are scored
    by the worker that replaces it, not failed with it; a job cancelled before its turn costs no worker."""
    await pool.score(build("completeness"), Run(input="a b", output="a b"))
    small = Run(input="hello world", output="hello there world")
    stuck = asyncio.create_task(pool.score(build(STUCK), Run(output="stuck")))
    behind = [asyncio.create_task(pool.score(build("completeness"), small)) for _ in range(3)]
    await asyncio.sleep(0)  # all four wait in the queue; the one worker takes them in one batch
    results = await asyncio.gather(stuck, *behind)
    assert (results[0].error or "").startswith("ScorerTimedOut: ") and pool.timed_out == 1
    assert [result.status for result in results[1:]] == [Status.OK] * 3 and pool.workers_lost == 0
    again = asyncio.create_task(pool.score(build(STUCK), Run(output="stuck")))
    dropped = asyncio.create_task(pool.score(build("completeness"), small))
    await asyncio.sleep(0.2)  # both sent; the stuck one runs
    dropped.cancel()
    await asyncio.gather(dropped, return_exceptions=True)
    assert (await again).status is Status.ERROR and pool.timed_out == 2 and pool.workers_lost == 0
    assert (await pool.score(build("completeness"), small)).status is Status.OK


async def test_results_carry_what_was_cut_and_errors_name_the_scorer(pool: CodeScorerPool) -> None:
    long = await pool.score(build("tone_consistency"), Run(output="y " * 80_000))
    assert long.status is Status.OK and long.cuts == {"output": 160_000}
    handmade = create_scorer("handmade").generate_score(lambda context: 1.0)
    refused = await pool.score(handmade, Run(output="x"))
    assert refused.status is Status.ERROR and "spanscore.scorers.build" in (refused.error or "")


_OWNER = """
import asyncio, sys
from spanscore.run import Run
from spanscore.scorers import build
from spanscore.scoring.code_pool import CodeScorerPool

async def main():
    pool = CodeScorerPool(processes=2, timeout_s=600.0)
    small = Run(input="a b", output="a b")
    await asyncio.gather(*(pool.score(build("completeness"), small) for _ in range(2)))
    while len(pool.pids()) < 2:
        await asyncio.sleep(0.1)
    stuck = asyncio.create_task(pool.score(build("tests.e2e.stuck_scorer:stuck"), Run(output="stuck")))
    await asyncio.sleep(0.5)
    print(*pool.pids(), flush=True)
    await stuck

asyncio.run(main())
"""


def test_workers_die_with_a_service_killed_by_sigkill(tmp_path: Path) -> None:
    """A service killed -9 cannot stop its workers; the kernel does (one of them is stuck, busy forever)."""
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER],
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        workers = [int(pid) for pid in owner.stdout.readline().split()]
        assert len(workers) == 2 and not any(_gone(pid) for pid in workers)
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 30
    while not all(_gone(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(pid) for pid in workers)
