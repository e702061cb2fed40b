"""Run scenarios through a C2 command and keep one JSON line per (call, version, scorer).

    .venv/bin/python -m bench.smalln_check.run --spanscore .venv/bin/spanscore \
        --scenarios bench/smalln_check/dev.json --seeds 20 --out /tmp/dev_before.jsonl

The seed of a call is numpy's default_rng([seed, scenario number]), so "before" and "after" see the very same
CSVs. Bounded by --seeds and --max-seconds; every failed call is kept as a record with its error.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.smalln_check.simulate import scenario_csv


def call(cmd: list[str], path: Path, confidence: float) -> dict[str, Any]:
    args = ["report", "compare", "--scores-csv", str(path), "--by", "version", "--baseline", "base"]
    proc = subprocess.run(
        [*cmd, *args, "--confidence", repr(confidence), "--format", "json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {proc.stderr.strip()[-800:]}")
    return dict(json.loads(proc.stdout))


def records(scen: dict[str, Any], seed: int, truth: dict[str, float], out: dict[str, Any]) -> list[dict[str, Any]]:
    recs = []
    for s in out.get("scorers", []):
        for v in s.get("versions", []):
            if v.get("version") == "base":
                if v.get("verdict") is not None or v.get("diff") is not None:
                    recs.append({"scenario": scen["id"], "seed": seed, "problem": "baseline carries diff/verdict"})
                continue
            recs.append({"scenario": scen["id"], "seed": seed, "scorer": s["scorer"], "delta": truth.get(v["version"]),
                         **{key: v.get(key) for key in ("version", "n", "n_eff", "mean", "ci_low", "ci_high", "diff",
                                                        "diff_low", "diff_high", "verdict", "n_needed")}})  # fmt: skip
    want = len(truth) * int(scen["k"])
    got = sum("verdict" in r for r in recs)
    if got != want:
        recs.append({"scenario": scen["id"], "seed": seed, "problem": f"{got} entries, expected {want}"})
    return recs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spanscore", required=True)
    p.add_argument("--scenarios", type=Path, required=True)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--max-seconds", type=float, default=840.0)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    scens = json.loads(a.scenarios.read_text())
    cmd = a.spanscore.split()
    began, calls, failed = time.monotonic(), 0, 0
    with tempfile.TemporaryDirectory(prefix="smalln_") as tmp, open(a.out, "w") as fh:
        for seed in range(a.first_seed, a.first_seed + a.seeds):
            for scen in scens:
                if time.monotonic() - began > a.max_seconds:
                    print(f"stopped by --max-seconds at seed {seed}", file=sys.stderr)
                    break
                path = Path(tmp) / "scores.csv"
                number = int(str(scen["id"])[1:3])
                truth = scenario_csv(np.random.default_rng([seed, number]), scen, path)
                calls += 1
                try:
                    recs = records(scen, seed, truth, call(cmd, path, float(scen["confidence"])))
                except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError) as exc:
                    failed += 1
                    recs = [{"scenario": scen["id"], "seed": seed, "problem": f"call failed: {exc}"}]
                fh.writelines(json.dumps(r) + "\n" for r in recs)
            else:
                continue
            break
    print(f"{calls} calls ({failed} failed), {time.monotonic() - began:.0f} s -> {a.out}", file=sys.stderr)
    return 0 if calls > failed else 2


if __name__ == "__main__":
    sys.exit(main())
