"""Sample the running service with py-spy during one gRPC ingest run.

Optional (``--profile``); py-spy is not a dependency: ``pip install py-spy``.
py-spy attaches to the service by pid (needs ptrace rights: root or
CAP_SYS_PTRACE, or kernel.yama.ptrace_scope 0) and writes collapsed stacks;
``hot_spots`` folds them into self time per function and inclusive time per
spanscore function, which the report lists under "What bounds each figure".
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.load import LoadSpec, run_load
from bench.service import ServiceProcess, temp_workdir
from bench.suite import Plan, _pool

_LINE = re.compile(r":\d+\)$")


def _py_spy() -> str | None:
    candidate = Path(sys.executable).parent / "py-spy"
    return str(candidate) if candidate.exists() else shutil.which("py-spy")


def _frame_name(frame: str) -> str:
    """``fn (path/to/module.py:123)`` -> ``fn (module path)``, line dropped so a function folds into one row."""
    frame = _LINE.sub(")", frame.strip())
    for marker in ("site-packages/", "/spanscore/", "/lib/python3"):
        head, sep, tail = frame.partition(marker)
        if sep:
            prefix = "spanscore/" if marker == "/spanscore/" else ""
            return head.split(" (")[0] + " (" + prefix + tail
    return frame


def hot_spots(collapsed: str, top: int = 5) -> dict[str, list[tuple[str, float]]]:
    """Self time per leaf function and inclusive time per spanscore function, as shares of all samples."""
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame_name(frame) for frame in stack.split(";") if "(" in frame]
        if not frames:
            continue
        total += count
        self_time[frames[-1]] += count
        for name in set(frames):
            if "(spanscore/" in name:
                inclusive[name] += count
    if not total:
        return {"self": [], "inclusive": []}
    return {
        "self": [(name, count / total) for name, count in self_time.most_common(top)],
        "inclusive": [(name, count / total) for name, count in inclusive.most_common(top * 2)],
    }


def profile_ingest(plan: Plan, log: Callable[[str], None]) -> dict[str, Any] | None:
    """gRPC small spans, batches of 100, for ``plan.seconds`` while py-spy samples the service at 100 Hz."""
    py_spy = _py_spy()
    if py_spy is None:
        log("  profile: py-spy not installed (pip install py-spy); skipped")
        return None
    seconds = max(plan.seconds, 3.0)
    with temp_workdir("profile") as workdir, ServiceProcess(Path(workdir)) as service, _pool() as pool:
        output = Path(workdir) / "profile.txt"
        if service.process is None:
            return None
        # Warm up first so lazy imports and first-insert set-up stay out of the samples.
        _profiled_load(pool, LoadSpec("grpc", service.grpc_port, 100, False, 1.0, 1000, concurrency=plan.concurrency))
        sampler = subprocess.Popen(
            [
                py_spy,
                "record",
                "--pid",
                str(service.process.pid),
                "--format",
                "raw",
                "--output",
                str(output),
                "--rate",
                "100",
                "--duration",
                str(int(seconds) + 1),
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        spec = LoadSpec(
            "grpc",
            service.grpc_port,
            100,
            False,
            seconds,
            max(1, plan.max_spans // 100),
            concurrency=plan.concurrency,
            sequence_base=1_000_000,
        )
        load = _profiled_load(pool, spec)
        try:
            _, error = sampler.communicate(timeout=seconds + 30)
        except subprocess.TimeoutExpired:
            sampler.kill()
            _, error = sampler.communicate(timeout=10)
        if sampler.returncode != 0 or not output.exists():
            log(f"  profile: py-spy failed ({error.decode(errors='replace').strip()[-300:]}); skipped")
            return None
        spots = hot_spots(output.read_text())
    log("  profile: " + "; ".join(f"{name} {share:.0%}" for name, share in spots["self"]))
    return {"spans_per_s": load["acked_spans"] / load["elapsed_s"], "seconds": seconds, **spots}


def _profiled_load(pool: ProcessPoolExecutor, spec: LoadSpec) -> dict[str, Any]:
    result: dict[str, Any] = pool.submit(run_load, asdict(spec)).result()
    return result
