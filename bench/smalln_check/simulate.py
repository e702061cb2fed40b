"""Scored rows with known true means for the small-sample check (issue #41, contract C2).

Every run has a hidden trait x ~ U(0, 1). A scorer's expected value on a run is m(x) = p + slope (x - 0.5),
so the version's true mean is exactly p whatever the slope; the slope lets a value-linked sampling rule
(pi depends on x) bias an unweighted mean, which only the 1/pi weighting undoes. Exactly n runs of each
version are scored: x is drawn from U(0, 1) and kept with probability pi(x) until n are kept, i.e. the
scored runs of a Poisson-sampled stream, conditioned on how many there were. All k scorers score the same
runs of a version (their values share x), as a rule that samples a run for every scorer does.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import numpy as np

Rng = np.random.Generator

# kind -> its true mean on the baseline (values() draws a run's value given its expected value)
KIND_MEANS = {"passfail": 0.7, "passfail_high": 0.92, "beta_mid": 0.6, "skewed": 0.15, "ties": 0.55, "zero_one": 0.5}
MIX = ["beta_mid", "passfail", "skewed", "ties", "zero_one", "passfail_high"]
MIX_MID = ["beta_mid", "passfail", "ties", "zero_one", "beta_mid"]  # all at mean 0.5, room for +-0.2


def values(rng: Rng, kind: str, m: np.ndarray) -> np.ndarray:
    if kind in ("passfail", "passfail_high"):
        return (rng.random(m.size) < m).astype(float)
    if kind == "beta_mid":
        return rng.beta(6 * m, 6 * (1 - m))
    if kind == "skewed":  # mostly near 0, a long tail towards 1
        return rng.beta(1.2 * m, 1.2 * (1 - m))
    if kind == "ties":  # five levels 0, .25, .5, .75, 1
        return rng.binomial(4, m) / 4.0
    if kind == "zero_one":  # 40% exactly 0 or 1, the rest spread over (0, 1)
        hard = rng.random(m.size) < 0.4
        return np.where(hard, (rng.random(m.size) < m).astype(float), rng.beta(4 * m, 4 * (1 - m)))
    raise ValueError(kind)


def scorers(kind: str, k: int) -> list[tuple[str, str, float]]:
    """(name, kind, baseline mean) for the k scorers of a scenario."""
    if kind == "mix":
        kinds = [(MIX[i % len(MIX)], KIND_MEANS[MIX[i % len(MIX)]]) for i in range(k)]
    elif kind == "mix_mid":
        kinds = [(MIX_MID[i % len(MIX_MID)], 0.5) for i in range(k)]
    else:
        kinds = [(kind, KIND_MEANS[kind])] * k
    return [(f"sc{i:02d}_{kd}", kd, p) for i, (kd, p) in enumerate(kinds)]


PI: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "1": lambda x: np.ones_like(x),
    "01": lambda x: np.full_like(x, 0.1),
    "mixed": lambda x: np.where(x > 0.5, 1.0, 0.2),
    "smooth": lambda x: 0.5 * (0.25 + 1.5 * x),
}
SAMPLING = {  # scenario sampling -> (baseline's rule, other versions' rule)
    "equal": ("1", "1"),
    "b1_v01": ("1", "01"),
    "b01_v1": ("01", "1"),
    "mixed": ("mixed", "mixed"),
    "mixed_vs_1": ("1", "mixed"),
    "smooth": ("smooth", "smooth"),
}


def scored_runs(rng: Rng, n: int, rule: str) -> tuple[np.ndarray, np.ndarray]:
    kept: list[np.ndarray] = []
    got = 0
    while got < n:
        x = rng.random(4 * n + 16)
        x = x[rng.random(x.size) < PI[rule](x)]
        kept.append(x)
        got += x.size
    xs = np.concatenate(kept)[:n]
    return xs, PI[rule](xs)


def version_rows(
    rng: Rng, name: str, n: int, rule: str, scs: list[tuple[str, str, float]], delta: float
) -> list[tuple[str, str, float, float]]:
    x, pi = scored_runs(rng, n, rule)
    rows = []
    for sname, kind, p in scs:
        mu = p + delta
        slope = min(0.3, 0.6 * min(mu, 1 - mu))
        for value, prob in zip(values(rng, kind, mu + slope * (x - 0.5)).tolist(), pi.tolist(), strict=True):
            rows.append((name, sname, value, prob))
    return rows


def scenario_csv(rng: Rng, scen: dict[str, object], path: Path) -> dict[str, float]:
    """Write one call's CSV; returns each non-baseline version's true difference from the baseline."""
    n, k = int(scen["n"]), int(scen["k"])  # type: ignore[call-overload]
    kind, (b_rule, v_rule) = str(scen["kind"]), SAMPLING[str(scen["sampling"])]
    scs = scorers(kind, k)
    if scen["effect"] == "power":
        truth = {f"e{d:+.2f}": d for d in (0.05, 0.10, 0.20, -0.05, -0.10, -0.20)}
    else:
        truth = {f"v{i:02d}": 0.0 for i in range(1, 11)}
    rows = version_rows(rng, "base", n, b_rule, scs, 0.0)
    for name, d in truth.items():
        rows += version_rows(rng, name, n, v_rule, scs, d)
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["version", "scorer", "value", "inclusion_probability"])
        out.writerows([(v, s, repr(float(y)), repr(float(p))) for v, s, y, p in rows])
    return truth
