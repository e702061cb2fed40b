"""What one span's text costs the built-in code scorers, and what a stuck scorer costs the service.

``python -m bench.scorer_bounds [--sizes 8000,64000,1000000] [--parts text,pool,serve]`` prints JSON:

- ``per_kb``: CPU microseconds per KB of text for every built-in code scorer and every adversarial
  shape (no end mark, one long token, repeated separators, deep nesting, many newlines...), best of
  three, at each size. The run carries the text in every field (input reversed, answer, ground truth,
  context, a tool call, a session turn), so each figure is per KB of *each* field. Past
  ``MAX_TEXT_CHARS`` the texts are cut, so the 1 MB figure is the cost of the cap spread over 1 MB.
- ``worst``: per scorer, the worst shape at each size.
- ``pool``: the code-scorer worker pool: seconds until the first result (two workers started and
  warmed up), the round trip of one small job, and each worker's memory (RSS, and PSS, which shares
  the pages the workers have in common).
- ``serve`` (not by default): a real ``spanscore serve`` scoring ``tone_consistency``: the slowest ``/healthz``
  answer while a 48 KB answer without a full stop is scored, and the seconds from SIGTERM to exit
  while a 160 KB one is. Run it with ``PYTHONPATH`` pointing at an older checkout for the before figure.

Everything runs on loopback, bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spanscore.run import Run, ToolCall, Turn
from spanscore.scorers import Scorer, build
from spanscore.scorers.registry import code_builtins

OPTIONS = {"tool_call_accuracy": {"expected_tool": "search"}}
"""Options for the built-ins that cannot be built without any."""

SHAPES: dict[str, Callable[[int], str]] = {
    "no end mark": lambda n: ("y " * n)[:n],
    "one long token": lambda n: "a" * n,
    "a token of dashes": lambda n: "a" + "-" * (n - 2) + "a",
    "a whitespace run inside": lambda n: "a" + " " * (n - 2) + "a",
    "repeated separators": lambda n: (", ; " * n)[:n],
    "many newlines": lambda n: "\n" * n,
    "end marks only": lambda n: ("?!." * n)[:n],
    "open brackets": lambda n: "(" * n,
    "nested brackets": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "nested quotes": lambda n: ("\"'" * n)[:n],
    "angles without a close": lambda n: "<" * n,
    "marker look-alikes": lambda n: ("<< end " * n)[:n],
    "code fences": lambda n: ("```" * n)[:n],
    "template braces": lambda n: ("{{" * n)[:n],
    "distinct words": lambda n: " ".join(f"w{i:06x}q" for i in range(n // 9)),
    "distinct long words": lambda n: " ".join(f"{i:063x}" for i in range(n // 64)),
}
"""Adversarial texts of about ``n`` characters: each one broke, or could break, a backtracking scan."""


def adversarial_run(text: str) -> Run:
    """A run carrying ``text`` in every field a built-in reads (the input side reversed, so the sides differ)."""
    other = text[::-1]
    call = ToolCall("search", arguments=text, result=text)
    return Run(
        input=other,
        output=text,
        ground_truth=other,
        context=[text],
        system=text,
        tool_calls=[call],
        turns=[Turn("t1", "", "", user=other, answer=text, tool_calls=(call, call))],
    )


def built_in(name: str) -> Scorer:
    return build(name, **OPTIONS.get(name, {}))


def cpu_s(scorer: Scorer, run: Run, repeat: int = 2) -> float:
    """CPU seconds of this process for one scoring, best of ``repeat`` (a collection is not the scorer's work)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        scorer.run(run)
        best = min(best, time.process_time() - started)
    return best


def per_kb(sizes: list[int]) -> dict[str, dict[str, dict[int, float]]]:
    figures: dict[str, dict[str, dict[int, float]]] = {}
    for name in code_builtins():
        scorer = built_in(name)
        figures[name] = {
            shape: {size: round(cpu_s(scorer, adversarial_run(make(size)), 3) / size * 1e9, 2) for size in sizes}
            for shape, make in SHAPES.items()
        }
    return figures


def worst(figures: dict[str, dict[str, dict[int, float]]]) -> dict[str, dict[int, tuple[str, float]]]:
    out: dict[str, dict[int, tuple[str, float]]] = {}
    for name, shapes in figures.items():
        sizes = next(iter(shapes.values())).keys()
        out[name] = {
            size: max(((shape, per[size]) for shape, per in shapes.items()), key=lambda x: x[1]) for size in sizes
        }
    return out


def _memory_kb(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
        fields = dict(line.split(":", 1) for line in rollup if ":" in line)
    return {key.lower(): int(fields[key].split()[0]) for key in ("Rss", "Pss")}


async def pool_costs() -> dict[str, Any]:
    from spanscore.scoring.code_pool import CodeScorerPool

    pool = CodeScorerPool(processes=2, timeout_s=30.0)
    small = Run(input="What is the capital of France?", output="The capital of France is Paris.")
    try:
        started = time.perf_counter()
        await pool.score(build("completeness"), small)
        first = time.perf_counter() - started
        trips = []
        for _ in range(50):
            started = time.perf_counter()
            await pool.score(build("completeness"), small)
            trips.append(time.perf_counter() - started)
        inline = cpu_s(build("completeness"), small, 50)
        memory = [_memory_kb(pid) for pid in pool.pids()]
    finally:
        await pool.shutdown()
    return {
        "first_result_s": round(first, 2),
        "small_job_round_trip_ms": round(sorted(trips)[len(trips) // 2] * 1000, 2),
        "small_job_inline_cpu_ms": round(inline * 1000, 3),
        "workers_kb": memory,
    }


def _serve(directory: Path, answer_kb: int) -> tuple[subprocess.Popen[str], dict[str, int], list[str]]:
    from bench.service import free_port

    ports = {"grpc": free_port(), "http": free_port(), "api": free_port()}
    config = {
        "collector": {
            "grpc": {"port": ports["grpc"]},
            "http": {"port": ports["http"]},
            "runs": {"quiet_period_s": 0.3},
        },
        "api": {"port": ports["api"]},
        "scoring": {"poll_interval_s": 0.05},
        "rules": [{"name": "tone", "scorers": ["tone_consistency"]}],
    }
    (directory / "spanscore.yaml").write_text(json.dumps(config), encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "spanscore.cli.commands", "serve", "-c", "spanscore.yaml"],
        cwd=directory,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    started = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "spanscore serving" in line:
                started.set()

    threading.Thread(target=read, daemon=True).start()
    if not started.wait(120):
        process.kill()
        raise RuntimeError("spanscore serve did not start:\n" + "".join(lines[-20:]))
    return process, ports, lines


def _send(port: int, answer: str) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True)))
    output = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}])
    with provider.get_tracer("bench").start_as_current_span("invoke_agent writer") as span:
        span.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.output.messages": output})
    provider.shutdown()


def _health_s(port: int, ceiling_s: float) -> float:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=ceiling_s) as reply:
            reply.read()
    except OSError:
        return ceiling_s
    return time.monotonic() - started


def serve_stalls(window_s: float = 30.0) -> dict[str, float]:
    """The slowest /healthz while 48 KB is scored; SIGTERM to exit while 160 KB is (capped at ``window_s``)."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as directory:
        process, ports, _ = _serve(Path(directory), 48)
        try:
            _send(ports["grpc"], "y " * 24_000)
            deadline, slowest = time.monotonic() + window_s, 0.0
            while time.monotonic() < deadline:
                slowest = max(slowest, _health_s(ports["api"], window_s))
                time.sleep(0.05)
            out["healthz_slowest_s_48kb"] = round(slowest, 3)
        finally:
            process.kill()
            process.wait()
    with tempfile.TemporaryDirectory() as directory:
        process, ports, _ = _serve(Path(directory), 160)
        try:
            _send(ports["grpc"], "y " * 80_000)
            time.sleep(1.5)
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=120)
                out["sigterm_to_exit_s_160kb"] = round(time.monotonic() - started, 2)
            except subprocess.TimeoutExpired:
                out["sigterm_to_exit_s_160kb"] = float("inf")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="8000,64000,1000000", help="text sizes in characters, comma-separated")
    parser.add_argument(
        "--parts", default="text,pool", help="what to measure, comma-separated: text, pool, serve (about a minute)"
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    report: dict[str, Any] = {"cpus": os.cpu_count()}
    if "text" in parts:
        figures = per_kb([int(size) for size in args.sizes.split(",")])
        report |= {"per_kb_us": figures, "worst_us_per_kb": worst(figures)}
    if "pool" in parts:
        report["pool"] = asyncio.run(pool_costs())
    if "serve" in parts:
        report["serve"] = serve_stalls()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
