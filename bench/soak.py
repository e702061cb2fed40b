"""``python -m bench.soak [--acknowledge stored] [--rate 33000] [--minutes 10] [--out soak.json]``.

A long run at a fixed share of the sustained rate (#43 asks for an hour at 80%): one ``spanscore serve`` with
``bench.ack_modes``' rule, gRPC, the small template, 1,000 spans per request, paced open-loop in 30 s windows.
After each window: the rate reached, ack p50 / p99, the service's RSS, and the part directories on disk
(active parts and replaced ones not yet removed: the merge backlog as the engine's files show it; the query
API does not serve ``system`` tables). At the end, every stored trace's run must have been decided
(``bench.suite.decided_traces``). Bounded by ``--minutes``; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.ack_modes import RULE
from bench.load import LoadSpec, load_summary, run_load
from bench.service import ServiceProcess, temp_workdir
from bench.suite import _pool, decided_traces

WINDOW_S = 30.0


def part_dirs(data: Path) -> dict[str, int]:
    """Part directories per table directory under the engine's data path.

    ``os.walk`` skips a directory the engine removes while it is walked (a merge's temporary part): ``rglob``
    raised there and ended an hour's soak at its eleventh minute.
    """
    out: dict[str, int] = {}
    for root, _, files in os.walk(data):
        if "columns.txt" in files:
            table = Path(root).parent.name
            out[table] = out.get(table, 0) + 1
    return out


def rss_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def soak(acknowledge: str, rate: float, minutes: float) -> dict[str, Any]:
    windows: list[dict[str, Any]] = []
    config: dict[str, object] = {"storage": {"acknowledge": acknowledge}, "rules": [RULE]}
    with temp_workdir("soak") as workdir, ServiceProcess(Path(workdir), config) as service, _pool() as pool:
        assert service.process is not None
        sequence, begun = 0, time.monotonic()
        while time.monotonic() - begun < minutes * 60:
            spec = LoadSpec(
                "grpc", service.grpc_port, 1000, False, WINDOW_S, 10**6, rate=rate / 1000, sequence_base=sequence
            )
            result = load_summary(pool.submit(run_load, asdict(spec)).result())
            sequence = result["next_sequence"]
            parts = part_dirs(Path(workdir) / "data")
            window = {
                "t_s": round(time.monotonic() - begun),
                "spans_per_s": round(result["spans_per_s"]),
                "p50_ms": round(result["ack_p50_ms"], 1),
                "p99_ms": round(result["ack_p99_ms"], 1),
                "failed": result["failed_requests"],
                "rss_mb": rss_mb(service.process.pid),
                "part_dirs": sum(parts.values()),
                "load": round(os.getloadavg()[0], 2),
            }
            windows.append(window)
            print(json.dumps(window), flush=True)
        decisions = decided_traces(service, settle_s=40)
    return {"acknowledge": acknowledge, "rate": rate, "minutes": minutes, "windows": windows, "decisions": decisions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--acknowledge", choices=("stored", "spooled"), default="stored")
    parser.add_argument("--rate", type=float, default=33_000.0, help="spans per second offered")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = soak(args.acknowledge, args.rate, args.minutes)
    print(json.dumps(result["decisions"]))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
