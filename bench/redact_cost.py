"""What redaction costs per judged run, next to the CPU of the judge call itself (docs/security.md, "Redaction").

Judged runs are made from the labelled set's dev part (bench/redact/dev.jsonl, never the holdout): three texts
each, as question, answer and tool result, in the prompt shape of an ``llm_judge`` rule (delimited blocks).
Redaction is timed as the judge path runs it: every prompt of the run through the default policy with one
run's placeholders. The judge call is one in-process ``litellm.acompletion`` against the fake OpenAI-compatible
server, run in its own process so that only the caller's CPU is counted.

    .venv/bin/python -m bench.redact_cost [--runs 100] [--calls 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from spanscore.redaction.redactor import Placeholders
from spanscore.redaction.scope import default_redactor
from spanscore.scorers.llm.steps import delimit

DEV = Path(__file__).parent / "redact" / "dev.jsonl"


def judged_runs(count: int) -> list[str]:
    texts = [json.loads(line)["text"] for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    runs = []
    for index in range(count):
        question, answer, result = (texts[(3 * index + k) % len(texts)] for k in range(3))
        runs.append(
            f"Question: {delimit('input', question)}\nAnswer: {delimit('output', answer)}\n"
            f"Tool results: {delimit('context', result)}\nIs the answer right? ok = 1 when it is."
        )
    return runs


def redaction_us(prompts: list[str], repeats: int = 5) -> list[float]:
    redactor = default_redactor()
    redactor.redact("warm up jane@x.org 4111111111111111")
    per_run: list[float] = []
    for prompt in prompts:
        best = float("inf")
        for _ in range(repeats):
            started = time.process_time()
            redactor.redact(prompt, Placeholders())
            best = min(best, time.process_time() - started)
        per_run.append(best * 1e6)
    return per_run


def judge_call_cpu_ms(calls: int) -> float:
    server = subprocess.Popen(
        [sys.executable, "tests/fakes/fake_openai.py", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip().rsplit(" ", 1)[-1]
        return asyncio.run(_calls(base_url, calls))
    finally:
        server.terminate()
        server.wait(timeout=10)


async def _calls(base_url: str, calls: int) -> float:
    from spanscore.scorers.judge.litellm_call import litellm

    async def one() -> None:
        await litellm.acompletion(
            model="openai/judge",
            api_base=base_url,
            api_key="unused",
            messages=[{"role": "user", "content": "Is it right?"}],
            temperature=0,
        )

    for _ in range(3):
        await one()
    started = time.process_time()
    for _ in range(calls):
        await one()
    return (time.process_time() - started) / calls * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    prompts = judged_runs(args.runs)
    costs = sorted(redaction_us(prompts))
    big = "x " * 40_000 + " ".join(prompts)[:100_000]
    big_us = redaction_us([big], repeats=3)[0]
    chars = statistics.median(len(p) for p in prompts)
    median, p95 = statistics.median(costs), costs[int(0.95 * len(costs))]
    judge_ms = judge_call_cpu_ms(args.calls)
    print(f"judged runs: {len(prompts)}, median prompt {chars:.0f} characters")
    print(f"redaction CPU per judged run: median {median:.0f} us, p95 {p95:.0f} us")
    print(f"redaction CPU of one prompt of {len(big)} characters: {big_us / 1000:.1f} ms")
    print(f"judge call CPU (litellm.acompletion in-process, fake server): {judge_ms:.2f} ms per call")


if __name__ == "__main__":
    main()
