"""Judge client benchmark: judgements per second by concurrency, CPU per judgement, overhead per call.

Starts the fake OpenAI-compatible judge (tests/fakes/fake_openai.py) in a
separate process on 127.0.0.1 with a fixed answer latency, then drives
``JudgeClient.ask`` against it.

* throughput: N judgements at concurrency C (the model's max_concurrency is
  set to C), judgements/s = N / wall time, litellm in this process and through
  pools of judge worker processes (``--workers 0,2,3``; 0 is in-process);
* CPU per judgement over each throughput run, read from /proc for every
  process involved: this process, the judge workers, and the fake judge
  itself. It is what bounds judgements/s on a machine whose cores are shared
  (``cores x 1000 / total CPU ms`` is the ceiling), and unlike judgements/s it
  barely moves with the load other jobs put on the machine;
* overhead, measured sequentially so nothing queues: the median wall time of
  one ``ask`` minus the judge's latency (everything the client side adds,
  HTTP and the fake judge's own handling included), the part of it spent
  outside litellm (spanscore's layer), this process's CPU per ``ask``, and the
  floor: the same request as a bare aiohttp POST to the same server.

Usage: python bench/judge/bench_judge.py [--latency-ms 200] [--concurrency 1,16,64] [--calls-per-slot 6]
                                         [--workers 0,3] [--repeat 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import BaseModel

from spanscore.scorers.judge.client import DATA_RULE, JudgeClient, JudgeConfig
from spanscore.scorers.judge.litellm_call import litellm
from spanscore.scorers.judge.transport import InProcessTransport, Transport
from spanscore.scorers.judge.workers import WorkerPoolTransport

ROOT = Path(__file__).resolve().parents[2]
REPLY = '{"verdicts": [{"verdict": "yes", "reason": "supported"}, {"verdict": "no", "reason": "contradicted"}]}'
INSTRUCTIONS = "You check claims against context."
PROMPT = (
    "Check each claim against the context.\n\n<<<BEGIN context>>>\n[0] The company had 100 employees in 2020.\n"
    "[1] Current employee count is approximately 500.\n<<<END context>>>\n\n<<<BEGIN claims>>>\n"
    "[0] The company has 500 employees.\n[1] It was founded in 1990.\n<<<END claims>>>"
)
_TICK = os.sysconf("SC_CLK_TCK")


class Verdict(BaseModel):
    verdict: str
    reason: str


class Verdicts(BaseModel):
    verdicts: list[Verdict]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def start_server(latency_ms: float) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, str(ROOT / "tests/fakes/fake_openai.py"), "--port", "0", "--latency-ms", str(latency_ms)]
    process = subprocess.Popen([*command, "--reply", REPLY], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if "listening on" not in line:
        process.kill()
        raise SystemExit(f"fake judge did not start: {line!r}")
    return process, line.split()[-1]


async def one(client: JudgeClient, config: JudgeConfig) -> float:
    started = time.perf_counter()
    await client.ask(config, instructions=INSTRUCTIONS, prompt=PROMPT, schema=Verdicts)
    return time.perf_counter() - started


@dataclass
class Run:
    rate: float  # judgements/s
    parent_ms: float  # CPU per judgement in this process (all threads)
    workers_ms: float  # CPU per judgement in the judge worker processes
    server_ms: float  # CPU per judgement in the fake judge


async def throughput(base_url: str, server_pid: int, concurrency: int, calls: int, workers: int) -> Run:
    config = JudgeConfig(model="openai/gpt-4o-mini", api_base=base_url, max_concurrency=concurrency, timeout_s=30)
    pool = WorkerPoolTransport(workers) if workers else None
    if pool is not None:
        await pool.start()
    transport: Transport = pool or InProcessTransport()  # never the default (auto) transport: it may switch
    client = JudgeClient(environ={}, transport=transport)
    try:
        await asyncio.gather(*[one(client, config) for _ in range(min(concurrency, 8))])  # warm connections
        pids = pool.pids() if pool is not None else []
        workers_before = sum(cpu_seconds(pid) for pid in pids)
        server_before = cpu_seconds(server_pid)
        started, cpu_started = time.perf_counter(), time.process_time()
        await asyncio.gather(*[one(client, config) for _ in range(calls)])
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        workers_cpu = sum(cpu_seconds(pid) for pid in pids) - workers_before
        server_cpu = cpu_seconds(server_pid) - server_before
    finally:
        await client.aclose()
    per_call = 1000 / calls
    return Run(calls / elapsed, cpu * per_call, workers_cpu * per_call, server_cpu * per_call)


@dataclass
class Overhead:
    total_ms: float  # median wall time of one ask beyond the judge's latency
    layer_ms: float  # median time of one ask outside litellm.acompletion
    cpu_ms: float  # this process's CPU per sequential ask
    floor_ms: float  # median wall time of a bare aiohttp POST beyond the latency


async def overhead(base_url: str, latency_s: float, samples: int) -> Overhead:
    config = JudgeConfig(model="openai/gpt-4o-mini", api_base=base_url, timeout_s=30)
    client = JudgeClient(environ={}, transport=InProcessTransport())
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
        cpu_started = time.process_time()
        asks = [await one(client, config) for _ in range(samples)]
        cpu = time.process_time() - cpu_started
    finally:
        litellm.acompletion = original
    floor = await bare_http(base_url, samples)
    return Overhead(
        total_ms=(statistics.median(asks) - latency_s) * 1000,
        layer_ms=statistics.median(ask - call for ask, call in zip(asks, inner, strict=True)) * 1000,
        cpu_ms=cpu / samples * 1000,
        floor_ms=(statistics.median(floor) - latency_s) * 1000,
    )


async def bare_http(base_url: str, samples: int) -> list[float]:
    """The same chat request as one aiohttp POST: what loopback HTTP and the fake judge cost with no client."""
    body = json.dumps(
        {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": f"{INSTRUCTIONS}\n\n{DATA_RULE}\n\nAnswer with a single JSON object."},
                {"role": "user", "content": PROMPT},
            ],
            "temperature": 0,
            "max_tokens": 1024,
        }
    )
    times: list[float] = []
    async with aiohttp.ClientSession(headers={"Content-Type": "application/json"}) as session:
        for index in range(samples + 5):
            started = time.perf_counter()
            async with session.post(f"{base_url}/chat/completions", data=body) as response:
                await response.read()
            if index >= 5:
                times.append(time.perf_counter() - started)
    return times


def load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


async def main(latency_ms: float, levels: list[int], calls_per_slot: int, pools: list[int], repeat: int) -> None:
    process, base_url = start_server(latency_ms)
    try:
        print(f"fake judge {base_url}, latency {latency_ms:.0f} ms, {os.cpu_count()} cores, {load()}")
        for _ in range(repeat):
            for level in levels:
                for workers in pools:
                    run = await throughput(base_url, process.pid, level, level * calls_per_slot, workers)
                    where = f"{workers} worker processes" if workers else "in-process"
                    client_ms = run.parent_ms + run.workers_ms
                    print(
                        f"concurrency {level:>3}, {where:<18}: {run.rate:6.1f} judgements/s; CPU ms per judgement: "
                        f"client {client_ms:.2f} (this process {run.parent_ms:.2f}, workers {run.workers_ms:.2f}), "
                        f"fake judge {run.server_ms:.2f}; {load()}"
                    )
            result = await overhead(base_url, latency_ms / 1000, samples=40)
            print(
                f"median overhead per call (sequential, in-process): {result.total_ms:.2f} ms client side in total "
                f"(spanscore {result.layer_ms:.2f} ms, client CPU {result.cpu_ms:.2f} ms per call); "
                f"bare aiohttp POST to the same judge: {result.floor_ms:.2f} ms; {load()}"
            )
    finally:
        process.terminate()
        process.wait(timeout=5)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--calls-per-slot", type=int, default=6)
    parser.add_argument("--workers", default="0,3", help="judge worker pool sizes to measure; 0 is in-process")
    parser.add_argument("--repeat", type=int, default=1, help="measure everything this many times")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    pools = [int(w) for w in args.workers.split(",")]
    asyncio.run(main(args.latency_ms, levels, args.calls_per_slot, pools, args.repeat))
