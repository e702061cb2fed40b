"""A stand-in for `spanscore report compare --scores-csv` built on reference.py, to test the harness itself.

    .venv/bin/python -m bench.compare_check.run --spanscore ".venv/bin/python -m bench.compare_check.standin"

It is not the product's estimator; it shows that the simulation, the truths and the summaries give the
expected figures (false positives near alpha, coverage near the confidence) for a textbook method: Hajek means,
linearised variances, Wald intervals, and verdicts from Bonferroni-corrected difference intervals.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections import defaultdict
from typing import Any

import numpy as np

from bench.compare_check import reference

MIN_RUNS = 20


def _entry(version: str, y: np.ndarray, p: np.ndarray, confidence: float) -> dict[str, Any]:
    est = reference.hajek(y, p)
    half = reference.z(confidence) * est.var_hc0**0.5
    return {"version": version, "n": est.n, "n_eff": est.n_eff, "mean": est.mean, "ci_low": est.mean - half,
            "ci_high": est.mean + half, "diff": None, "diff_low": None, "diff_high": None, "verdict": None,
            "n_needed": None}  # fmt: skip


def _verdict(entry: dict[str, Any], a: reference.Estimate, b: reference.Estimate, conf: float, k: int) -> None:
    d, se = a.mean - b.mean, (a.var_hc0 + b.var_hc0) ** 0.5
    zq = reference.z(conf)
    entry.update(diff=d, diff_low=d - zq * se, diff_high=d + zq * se)
    zc = reference.z(1 - (1 - conf) / k)
    if min(a.n, b.n) < MIN_RUNS:
        per_run = a.var_hc0 * a.n + b.var_hc0 * b.n
        entry["verdict"] = "too_few"
        entry["n_needed"] = math.ceil((zc + reference.z(0.6)) ** 2 * per_run / max(d * d, 1e-9))
    else:
        entry["verdict"] = "better" if d - zc * se > 0 else "worse" if d + zc * se < 0 else "no_difference"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("report")
    p.add_argument("compare")
    p.add_argument("--scores-csv", required=True)
    p.add_argument("--by", default="version")
    p.add_argument("--baseline", required=True)
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--format", default="json")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    rows: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    with open(args.scores_csv, newline="") as fh:
        for row in csv.DictReader(fh):
            rows[row["scorer"]][row["version"]].append((float(row["value"]), float(row["inclusion_probability"])))
    scorers = []
    for scorer, by_version in rows.items():
        data = {v: (np.array([r[0] for r in rs]), np.array([r[1] for r in rs])) for v, rs in by_version.items()}
        base = reference.hajek(*data[args.baseline])
        entries = []
        for version, (y, pr) in data.items():
            entry = _entry(version, y, pr, args.confidence)
            if version != args.baseline:
                _verdict(entry, reference.hajek(y, pr), base, args.confidence, len(rows))
            entries.append(entry)
        scorers.append({"scorer": scorer, "versions": entries})
    out = {"by": args.by, "baseline": args.baseline, "confidence": args.confidence, "scorers": scorers}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
