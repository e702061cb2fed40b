"""What textbook tests give on the very same CSVs, so an excess can be told apart from the scenario's own.

    .venv/bin/python -m bench.smalln_check.textbook bench/smalln_check/dev.json --seeds 22

For each equal version: the Hajek difference with the HC1 sandwich variance (as the earlier blind check found
the command's intervals to be), tested (a) with z and (b) with Student t on Welch-Satterthwaite degrees of
freedom from Kish's effective n, each Bonferroni-corrected over the version's k scorers. A version with zero
variance on both sides is "no difference". No decision is tuned here; it is a yardstick, not the command.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

from bench.smalln_check.simulate import scenario_csv
from bench.smalln_check.summary import fmt_rate


def moments(y: np.ndarray, p: np.ndarray) -> tuple[float, float, float]:
    w = 1 / p
    mean = float(np.sum(w * y) / np.sum(w))
    n = y.size
    var = float(np.sum(w**2 * (y - mean) ** 2) / np.sum(w) ** 2) * n / max(n - 1, 1)
    return mean, var, float(np.sum(w) ** 2 / np.sum(w**2))


def false_family(
    rows: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]], version: str, alpha: float
) -> tuple[bool, bool]:
    scs = sorted({s for v, s in rows if v == version})
    z_hit = t_hit = False
    for s in scs:
        mv, vv, nv = moments(*rows[(version, s)])
        mb, vb, nb = moments(*rows[("base", s)])
        se = (vv + vb) ** 0.5
        if se == 0:
            continue
        df = (vv + vb) ** 2 / ((vv**2 / max(nv - 1, 1e-9)) + (vb**2 / max(nb - 1, 1e-9)))
        q = 1 - alpha / len(scs) / 2
        z_hit |= abs(mv - mb) / se > stats.norm.ppf(q)
        t_hit |= abs(mv - mb) / se > stats.t.ppf(q, df)
    return z_hit, t_hit


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenarios", type=Path)
    ap.add_argument("--seeds", type=int, default=22)
    ap.add_argument("--first-seed", type=int, default=1)
    a = ap.parse_args()
    print("| scenario | alpha | z, Bonferroni | t (Welch df on n_eff), Bonferroni |\n|---|---:|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for scen in json.loads(a.scenarios.read_text()):
            if scen["effect"] != 0.0:
                continue
            z_calls: dict[int, tuple[int, int]] = {}
            t_calls: dict[int, tuple[int, int]] = {}
            for seed in range(a.first_seed, a.first_seed + a.seeds):
                path = Path(tmp) / "s.csv"
                truth = scenario_csv(np.random.default_rng([seed, int(scen["id"][1:3])]), scen, path)
                cols: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
                with open(path) as fh:
                    for r in csv.DictReader(fh):
                        cols[(r["version"], r["scorer"])].append((float(r["value"]), float(r["inclusion_probability"])))
                rows = {key: (np.array([v for v, _ in x]), np.array([p for _, p in x])) for key, x in cols.items()}
                hits = [false_family(rows, v, 1 - scen["confidence"]) for v in truth]
                z_calls[seed] = (sum(h[0] for h in hits), len(hits))
                t_calls[seed] = (sum(h[1] for h in hits), len(hits))
            print(f"| {scen['id']} | {1 - scen['confidence']:.2f} | {fmt_rate(z_calls)} | {fmt_rate(t_calls)} |")


if __name__ == "__main__":
    main()
