"""Jobs per second through the code-scorer worker pool, and the service's own CPU per job.

``python -m bench.code_pool_rate [--jobs 6000] [--scorer answer_health] [--processes 2] [--concurrency 64]``
prints JSON: the jobs scored per second by ``--processes`` workers with ``--concurrency`` jobs in flight (the
service's ``scoring.workers`` bounds that), and the CPU the calling process spent per job (pickling, pipes,
the event loop: what the service pays besides the scorer). Each run is a small agent answer. Run it with
``PYTHONPATH`` pointing at an older checkout, from that checkout's directory (the workers are started with
``-m``, which puts the current directory first), for the before figure. Bounded by ``--jobs``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time

from spanscore.run import Run
from spanscore.scorers.registry import build
from spanscore.scoring.code_pool import CodeScorerPool


async def measure(jobs: int, scorer_name: str, processes: int, concurrency: int) -> dict[str, object]:
    pool = CodeScorerPool(processes, 30.0)
    scorer = build(scorer_name)
    runs = [
        Run(input=f"What is the capital of France? ({index})", output="The capital of France is Paris.",
            run_id=f"{index:016x}")
        for index in range(jobs)
    ]  # fmt: skip
    try:
        await asyncio.gather(*(pool.score(scorer, run) for run in runs[: 2 * processes]))  # workers up and warm
        limit = asyncio.Semaphore(concurrency)

        async def one(run: Run) -> str:
            async with limit:
                return (await pool.score(scorer, run)).status.value

        before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        statuses = await asyncio.gather(*(one(run) for run in runs))
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        await pool.shutdown()
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {
        "scorer": scorer_name,
        "jobs": jobs,
        "processes": processes,
        "concurrency": concurrency,
        "jobs_per_s": round(jobs / elapsed),
        "caller_cpu_us_per_job": round(1e6 * cpu / jobs, 1),
        "statuses": sorted(set(statuses)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=6000)
    parser.add_argument("--scorer", default="answer_health")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.jobs, args.scorer, args.processes, args.concurrency))))


if __name__ == "__main__":
    main()
