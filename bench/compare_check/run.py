"""Statistical checks of `spanscore report compare --scores-csv` (contract C2, issue #41) over many seeds.

    .venv/bin/python -m bench.compare_check.run --spanscore .venv/bin/spanscore --seeds 100 --max-seconds 900

Each seed simulates every scenario of scenarios.py, writes the C2 CSV, runs the command, and keeps one record
per (scenario, seed, scorer, version) with the command's figures, the truths and the reference estimates on
the same rows. summary.py turns the records into false-positive rates, coverage, power and the largest
differences from the reference. Bounded by --seeds and --max-seconds; exits 2 when the command never answered.
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

from bench.compare_check import reference
from bench.compare_check.scenarios import BASELINE, SCENARIOS, VERSIONS, role
from bench.compare_check.simulate import Sample, simulate, write_csv
from bench.compare_check.summary import summarise

VERDICTS = {"better", "worse", "no_difference", "too_few", None}


def compare(cmd: list[str], csv_path: Path, confidence: float, timeout: float) -> dict[str, Any]:
    args = [*cmd, "report", "compare", "--scores-csv", str(csv_path), "--by", "version", "--baseline", BASELINE]
    proc = subprocess.run(
        [*args, "--confidence", str(confidence), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {proc.stderr.strip()[-1500:]}")
    return dict(json.loads(proc.stdout))


def contract_problems(out: dict[str, Any], samples: list[Sample]) -> list[str]:
    """What in the answer breaks C2's shape; the records are still kept where they can be read."""
    problems = []
    if out.get("by") != "version" or out.get("baseline") != BASELINE:
        problems.append(f"by/baseline are {out.get('by')!r}/{out.get('baseline')!r}")
    got = {(s.get("scorer"), v.get("version")): v for s in out.get("scorers", []) for v in s.get("versions", [])}
    for smp in samples:
        entry = got.get((smp.scorer, smp.version))
        if entry is None:
            problems.append(f"no entry for scorer {smp.scorer} version {smp.version}")
        elif entry.get("verdict") not in VERDICTS:
            problems.append(f"verdict {entry.get('verdict')!r} is not one of the contract's")
        elif smp.version == BASELINE and any(entry.get(k) is not None for k in ("diff", "diff_low", "verdict")):
            problems.append(f"baseline entry of {smp.scorer} carries a diff or verdict")
    return problems


def reference_fields(smp: Sample, base: Sample, confidence: float, scorers: int, binary: bool) -> dict[str, Any]:
    est = reference.hajek(smp.values, smp.probs)
    wls_mean, wls_se = reference.wls_mean(smp.values, smp.probs)
    fields: dict[str, Any] = {
        "ref_n": est.n,
        "ref_n_eff": est.n_eff,
        "ref_mean": est.mean,
        "ref_wls_mean": wls_mean,
        "ref_wls_se": wls_se,
        "ref_unweighted": float(smp.values.mean()) if est.n else None,
        "ref_ci": reference.intervals(smp.values, smp.probs, confidence, binary),
    }
    if smp.version != BASELINE:
        d, d_se = reference.wls_diff(smp.values, smp.probs, base.values, base.probs)
        fields["ref_diff"], fields["ref_diff_se"] = d, d_se
        fields["ref_diff_ci"] = reference.diff_intervals(smp.values, smp.probs, base.values, base.probs, confidence)
        corrected = 1 - (1 - confidence) / scorers
        bonf = reference.diff_intervals(smp.values, smp.probs, base.values, base.probs, corrected)
        fields["ref_diff_ci"].update({f"{k}_bonferroni": v for k, v in bonf.items()})
    return fields


def records_for(
    scenario: str, seed: int, samples: list[Sample], out: dict[str, Any], confidence: float
) -> list[dict[str, Any]]:
    got = {(s["scorer"], v["version"]): v for s in out.get("scorers", []) for v in s.get("versions", [])}
    binary = {s.name: s.binary for s in SCENARIOS[scenario]}
    bases = {s.scorer: s for s in samples if s.version == BASELINE}
    deltas = {v.name: v.delta for v in VERSIONS}
    rising = {v.name: v.rising for v in VERSIONS}
    recs = []
    for smp in samples:
        tool = got.get((smp.scorer, smp.version), {})
        base = bases[smp.scorer]
        rec = {"scenario": scenario, "seed": seed, "scorer": smp.scorer, "binary": binary[smp.scorer],
               "version": smp.version, "role": role(smp.version), "delta": deltas[smp.version],
               "rising": rising[smp.version], "true_mean": smp.true_mean, "finite_mean": smp.finite_mean,
               "finite_diff": smp.finite_mean - base.finite_mean, "tool": tool}  # fmt: skip
        if smp.values.size >= 2:
            rec.update(reference_fields(smp, base, confidence, len(SCENARIOS[scenario]), binary[smp.scorer]))
        recs.append(rec)
    return recs


def run_seeds(cmd: list[str], args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[str], int]:
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    calls = 0
    deadline = time.monotonic() + args.max_seconds
    with tempfile.TemporaryDirectory(prefix="compare_check_") as tmp:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for index, (scenario, scorers) in enumerate(SCENARIOS.items()):
                if time.monotonic() > deadline:
                    problems.append(f"stopped at seed {seed}: --max-seconds {args.max_seconds} reached")
                    return records, problems, calls
                samples = simulate(np.random.default_rng([seed, index]), VERSIONS, scorers)
                path = Path(tmp) / f"{scenario}_{seed}.csv"
                write_csv(path, samples)
                calls += 1
                try:
                    out = compare(cmd, path, args.confidence, args.timeout)
                except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                    problems.append(f"{scenario} seed {seed}: {exc}")
                    continue
                problems += [f"{scenario} seed {seed}: {p}" for p in contract_problems(out, samples)]
                records += records_for(scenario, seed, samples, out, args.confidence)
    return records, problems, calls


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spanscore", help="command to run, e.g. .venv/bin/spanscore (or a C2 stand-in)")
    p.add_argument("--from-records", type=Path, help="summarise a --records-out file again instead of running")
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--max-seconds", type=float, default=1200.0, help="stop starting new calls after this long")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds one call may take")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--records-out", type=Path, help="write every record as JSON Lines here")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if args.from_records:
        with open(args.from_records) as fh:
            print("\n".join(summarise([json.loads(line) for line in fh], args.confidence)))
        return 0
    if not args.spanscore:
        p.error("--spanscore (the command to check) or --from-records is required")
    began = time.monotonic()
    records, problems, calls = run_seeds(args.spanscore.split(), args)
    if args.records_out:
        with open(args.records_out, "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in records)
    print(f"{calls} calls, {len(records)} records, {time.monotonic() - began:.0f} s, confidence {args.confidence}")
    print("\n".join(summarise(records, args.confidence)))
    print(f"\nproblems: {len(problems)}")
    print("\n".join(f"  {x}" for x in problems[:40]))
    return 0 if records else 2


if __name__ == "__main__":
    sys.exit(main())
