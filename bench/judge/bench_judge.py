"""Judge client benchmark: judgements per second by concurrency, and the client's overhead per call.

Starts the fake OpenAI-compatible judge (tests/fakes/fake_openai.py) in a
separate process on 127.0.0.1 with a fixed answer latency, then drives
``JudgeClient.ask`` against it.

* throughput: N judgements at concurrency C (the model's max_concurrency is
  set to C), judgements/s = N / wall time;
* overhead, measured sequentially so nothing queues: the median wall time of
  one ``ask`` minus the judge's latency (everything the client side adds:
  spanscore + litellm + HTTP), and the median time of ``ask`` spent outside
  its ``litellm.acompletion`` call (what spanscore's own layer adds);
* CPU per judgement: the client process's CPU time over a throughput run
  divided by the judgements, which bounds judgements/s per free core
  whatever else the machine is doing.

Usage: python bench/judge/bench_judge.py [--latency-ms 200] [--concurrency 1,16,64] [--calls-per-slot 6] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from spanscore.scorers.judge import JudgeClient, JudgeConfig
from spanscore.scorers.judge_litellm import litellm
from spanscore.scorers.judge_workers import WorkerPoolTransport

ROOT = Path(__file__).resolve().parents[2]
REPLY = '{"verdicts": [{"verdict": "yes", "reason": "supported"}, {"verdict": "no", "reason": "contradicted"}]}'


class Verdict(BaseModel):
    verdict: str
    reason: str


class Verdicts(BaseModel):
    verdicts: list[Verdict]


def start_server(latency_ms: float) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, str(ROOT / "tests/fakes/fake_openai.py"), "--port", "0", "--latency-ms", str(latency_ms)]
    process = subprocess.Popen([*command, "--reply", REPLY], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if "listening on" not in line:
        process.kill()
        raise SystemExit(f"fake judge did not start: {line!r}")
    return process, line.split()[-1]


PROMPT = (
    "Check each claim against the context.\n\n<<<BEGIN context>>>\n[0] The company had 100 employees in 2020.\n"
    "[1] Current employee count is approximately 500.\n<<<END context>>>\n\n<<<BEGIN claims>>>\n"
    "[0] The company has 500 employees.\n[1] It was founded in 1990.\n<<<END claims>>>"
)


async def one(client: JudgeClient, config: JudgeConfig) -> float:
    started = time.perf_counter()
    await client.ask(config, instructions="You check claims against context.", prompt=PROMPT, schema=Verdicts)
    return time.perf_counter() - started


async def throughput(base_url: str, concurrency: int, calls: int, workers: int = 0) -> tuple[float, float]:
    """Judgements per second, and this process's CPU milliseconds per judgement (all threads).

    With ``workers`` the calls go through a pool of judge worker processes, whose CPU is not counted.
    """
    config = JudgeConfig(model="openai/gpt-4o-mini", api_base=base_url, max_concurrency=concurrency, timeout_s=30)
    transport = WorkerPoolTransport(workers) if workers else None
    if transport is not None:
        await transport.start()
    client = JudgeClient(environ={}, transport=transport)
    await asyncio.gather(*[one(client, config) for _ in range(min(concurrency, 8))])  # warm connections
    started, cpu_started = time.perf_counter(), time.process_time()
    await asyncio.gather(*[one(client, config) for _ in range(calls)])
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    await client.aclose()
    return calls / elapsed, cpu / calls * 1000


async def overhead(base_url: str, latency_s: float, samples: int) -> tuple[float, float]:
    """Median client-side time per call beyond the judge's latency, and the part spent outside litellm."""
    config = JudgeConfig(model="openai/gpt-4o-mini", api_base=base_url, timeout_s=30)
    client = JudgeClient(environ={})
    inner: list[float] = []
    original = litellm.acompletion

    async def timed(**kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(**kwargs)
        finally:
            inner.append(time.perf_counter() - started)

    litellm.acompletion = timed
    try:
        for _ in range(10):
            await one(client, config)
        inner.clear()
        asks = [await one(client, config) for _ in range(samples)]
    finally:
        litellm.acompletion = original
    total = statistics.median(asks) - latency_s
    layer = statistics.median(ask - call for ask, call in zip(asks, inner, strict=True))
    return total * 1000, layer * 1000


async def main(latency_ms: float, levels: list[int], calls_per_slot: int, workers: int) -> None:
    process, base_url = start_server(latency_ms)
    try:
        print(f"fake judge {base_url}, latency {latency_ms:.0f} ms")
        for level in levels:
            rate, cpu_ms = await throughput(base_url, level, level * calls_per_slot)
            print(f"concurrency {level:>3}: {rate:7.1f} judgements/s, client CPU {cpu_ms:.2f} ms per judgement")
            if workers:
                rate, cpu_ms = await throughput(base_url, level, level * calls_per_slot, workers)
                print(
                    f"concurrency {level:>3}: {rate:7.1f} judgements/s with {workers} judge worker processes, "
                    f"parent CPU {cpu_ms:.2f} ms per judgement"
                )
        total, layer = await overhead(base_url, latency_ms / 1000, samples=40)
        print(f"median overhead per call: {total:.2f} ms client side in total (spanscore + litellm + HTTP)")
        print(f"median overhead per call: {layer:.2f} ms in spanscore's judge layer (outside litellm)")
    finally:
        process.terminate()
        process.wait(timeout=5)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--calls-per-slot", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2, help="also measure with N judge worker processes (0: no)")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    asyncio.run(main(args.latency_ms, levels, args.calls_per_slot, args.workers))
