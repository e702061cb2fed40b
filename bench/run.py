"""``python -m bench.run [--quick] [--smoke] [--only queries|growth] [--out FILE] [--profile]``.

Writes docs/benchmarks.md.

Runs, in order: OTLP ingest over gRPC and HTTP/protobuf against a separate
``spanscore serve`` (sustained rate, acknowledgement latency, peak RSS, stored
== acknowledged), the physical limits (decode alone, storage insert alone),
span received -> queryable latency, run complete -> code-scorer score
queryable under background load, and the hourly score series over 7 days from
the roll-up and from raw rows as the store grows to 10M scores. Optionally
samples the service with py-spy. Nothing is asserted: the output is figures
with their conditions. Last, ingest throughput, memory and a trace lookup as
the span store grows 1x -> 10x. ``--only queries`` or ``--only growth``
re-measures that section alone and puts it into the existing report.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.backfill_speed import run_backfill
from bench.bounds import bounds_text
from bench.ingest_growth import GROWTH_HEADING, growth_section
from bench.profile import profile_ingest
from bench.query_report import HEADING as QUERY_HEADING
from bench.query_report import query_section, splice
from bench.report import render
from bench.suite import (
    Plan,
    run_freshness,
    run_growth,
    run_ingest_case,
    run_limits,
    run_queries,
    run_scoring_latency,
)  # fmt: skip

REPO = Path(__file__).resolve().parent.parent


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _commit() -> str:
    try:
        result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, timeout=10)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "spanscore"], cwd=REPO, capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    suffix = " (spanscore/ has uncommitted changes)" if dirty.stdout.strip() else ""
    return result.stdout.decode().strip() + suffix


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def conditions() -> dict[str, str]:
    load1, load5, load15 = os.getloadavg()
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} logical CPUs ({_cpu_model()}), {_memory()} RAM, {platform.system()} "
        f"{platform.release()}",
        "load average at start (1/5/15 min)": f"{load1:.2f} / {load5:.2f} / {load15:.2f}",
        "software": f"Python {platform.python_version()}, grpcio {_version('grpcio')}, protobuf "
        f"{_version('protobuf')}, chdb {_version('chdb')}, aiohttp {_version('aiohttp')}",
        "spanscore commit": _commit(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1 run of 3 s per figure instead of 3 of 10 s")
    parser.add_argument("--smoke", action="store_true", help="smallest form for CI: two cases, 1 s, tiny counts")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks.md", help="markdown output")
    parser.add_argument("--json", type=Path, help="also write the raw results as JSON")
    parser.add_argument("--profile", action="store_true", help="sample the service with py-spy during gRPC ingest")
    parser.add_argument("--render", type=Path, metavar="JSON", help="only re-render the markdown from a --json file")
    parser.add_argument(
        "--only", choices=["queries", "growth"], help="run one section and splice it into the existing --out"
    )
    args = parser.parse_args(argv)
    if args.only:
        plan = Plan.make(quick=args.quick or args.smoke, smoke=args.smoke)
        return _only_section(args.out, args.json, plan, args.only)
    if args.render:
        results = json.loads(args.render.read_text())
    else:
        results = run_suite(quick=args.quick, smoke=args.smoke, profile=args.profile)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(results, bounds_text(results)))
    log(f"wrote {args.out}")
    if args.json and not args.render:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    return 0


def _only_section(out: Path, raw: Path | None, plan: Plan, section_name: str) -> int:
    """Re-measure section 5 (``queries``) or 6 (``growth``) alone and splice it into ``out``."""
    found = conditions()
    sizes = plan.query_sizes if section_name == "queries" else plan.growth_sizes
    log(
        f"bench: {section_name} section only, sizes {list(sizes)}, load average "
        f"{found['load average at start (1/5/15 min)']}"
    )
    keep = ("date", "load average at start (1/5/15 min)", "spanscore commit")
    kept = {key: found[key] for key in keep}
    if section_name == "queries":
        results = run_queries(plan, log)
        section, heading = query_section(results, kept), QUERY_HEADING
    else:
        results = run_growth(plan, log)
        section, heading = growth_section(results, kept), GROWTH_HEADING
    out.write_text(splice(out.read_text() if out.exists() else "", section, heading))
    log(f"wrote the {section_name} section of {out}")
    if raw:
        raw.write_text(json.dumps({section_name: results, "conditions": found}, indent=1, default=str))
    return 0


def run_suite(*, quick: bool, smoke: bool, profile: bool = False) -> dict[str, Any]:
    plan = Plan.make(quick=quick or smoke, smoke=smoke)
    mode = "smoke" if smoke else "quick" if quick else "full"
    results: dict[str, Any] = {"mode": mode, "conditions": conditions(), "plan": asdict(plan), "ingest": []}
    started = time.perf_counter()
    log(f"bench: {mode} run, load average {results['conditions']['load average at start (1/5/15 min)']}")
    log("ingest:")
    for transport, llm, batch in plan.cases:
        results["ingest"].append(run_ingest_case(plan, transport, llm, batch, log))
    for transport, llm, batch in plan.spooled_cases:
        results["ingest"].append(run_ingest_case(plan, transport, llm, batch, log, acknowledge="spooled"))
    log("physical limits:")
    results["limits"] = run_limits(plan, log)
    log("received -> queryable:")
    results["freshness"] = run_freshness(plan, log)
    log("run complete -> score queryable:")
    results["scoring_latency"] = run_scoring_latency(plan, log)
    log("hourly score series, roll-up vs raw rows:")
    results["queries"] = run_queries(plan, log)
    log("ingest as the span store grows:")
    results["growth"] = run_growth(plan, log)
    log("live scoring and backfill on stored runs:")
    results["backfill"] = run_backfill(mode, log)
    results["profile"] = profile_ingest(plan, log) if profile else None
    results["conditions"]["suite wall time"] = f"{time.perf_counter() - started:.0f} s"
    return results


if __name__ == "__main__":
    sys.exit(main())
