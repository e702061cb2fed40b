"""The harness's own arithmetic on cases worked out by hand (no spanscore needed).

.venv/bin/python -m pytest -n 0 -q -p no:cacheprovider bench/compare_check/test_compare_check.py
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.compare_check import reference, run, summary
from bench.compare_check.simulate import Sample, Scorer, Version, inclusion, simulate, write_csv

# version: values 1, 0, 1 sampled with pi 0.5, 0.25, 1 -> weights 2, 4, 1
Y_V, P_V = np.array([1.0, 0.0, 1.0]), np.array([0.5, 0.25, 1.0])
# baseline: values 0, 1 with pi 1, 0.5 -> weights 1, 2
Y_B, P_B = np.array([0.0, 1.0]), np.array([1.0, 0.5])


def test_hajek_by_hand() -> None:
    est = reference.hajek(Y_V, P_V)
    # mean (2*1 + 4*0 + 1*1) / 7; residuals 4/7, -3/7, 4/7; sum w^2 e^2 = (4*16 + 16*9 + 16) / 49 = 224/49
    assert est.mean == pytest.approx(3 / 7)
    assert est.var_hc0 == pytest.approx(224 / 49 / 49)
    assert est.var_hc1 == pytest.approx(224 / 49 / 49 * 3 / 2)
    assert est.n == 3 and est.n_eff == pytest.approx(49 / 21)
    mean, se = reference.wls_mean(Y_V, P_V)
    assert mean == pytest.approx(3 / 7) and se**2 == pytest.approx(224 / 2401)


def test_difference_by_hand() -> None:
    # baseline mean 2/3, sum w^2 e^2 = 1*(4/9) + 4*(1/9) = 8/9 over (sum w)^2 = 9 -> 8/81
    diff, se = reference.wls_diff(Y_V, P_V, Y_B, P_B)
    assert diff == pytest.approx(3 / 7 - 2 / 3)
    assert se**2 == pytest.approx(224 / 2401 + 8 / 81)
    low, high = reference.diff_intervals(Y_V, P_V, Y_B, P_B, 0.95)["wald_hc0_z"]
    assert (low + high) / 2 == pytest.approx(-5 / 21) and high - low == pytest.approx(2 * 1.959964 * se, rel=1e-6)


def test_inclusion_averages_the_rate_and_tracks_x() -> None:
    x = np.array([0.0, 0.5, 1.0])
    assert inclusion(x, 0.2, rising=True) == pytest.approx([0.05, 0.2, 0.35])
    assert inclusion(x, 0.2, rising=False) == pytest.approx([0.35, 0.2, 0.05])


def test_plain_mean_is_biased_and_hajek_is_not() -> None:
    """Expected bias of the plain mean: SLOPE * 1.5 * Var(x) / 1 = 0.3 * 1.5 / 12 = 0.0375, upward when pi rises."""
    scorers = [Scorer("q", binary=False, mu=0.6)]
    versions = [Version("up", 200_000, 0.5, True, 0.0), Version("down", 200_000, 0.5, False, 0.0)]
    up, down = simulate(np.random.default_rng(7), versions, scorers)
    assert up.values.mean() - 0.6 == pytest.approx(0.0375, abs=0.004)
    assert down.values.mean() - 0.6 == pytest.approx(-0.0375, abs=0.004)
    for smp in (up, down):
        assert reference.hajek(smp.values, smp.probs).mean == pytest.approx(0.6, abs=0.004)


def test_csv_round_trip_is_exact(tmp_path: Path) -> None:
    smp = Sample("v1", "pass", np.array([1.0, 0.0]), np.array([0.1234567890123, 1.0]), 0.5, 0.5)
    write_csv(tmp_path / "s.csv", [smp])
    with open(tmp_path / "s.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["version", "scorer", "value", "inclusion_probability"]
    assert [float(r[3]) for r in rows[1:]] == [0.1234567890123, 1.0]


def _rec(verdict: str | None, low: float, high: float, role: str = "null", seed: int = 1) -> dict[str, Any]:
    tool = {"verdict": verdict, "ci_low": low, "ci_high": high, "diff_low": low - 0.6, "diff_high": high - 0.6}
    return {"scenario": "one_score", "seed": seed, "scorer": "q", "version": f"v{seed}", "role": role,
            "delta": 0.0, "true_mean": 0.6, "finite_mean": 0.61, "finite_diff": 0.01, "tool": tool}  # fmt: skip


def test_rates_and_coverage_by_hand() -> None:
    records = [_rec("better", 0.5, 0.7, seed=1), _rec("no_difference", 0.62, 0.7, seed=2),
               _rec("worse", 0.55, 0.605, seed=3), _rec("too_few", 0.4, 0.8, seed=4)]  # fmt: skip
    fp = "\n".join(summary.false_positives(records, 0.05))
    assert "one_score     null  0.5000 (2/4," in fp
    cov = "\n".join(summary.coverage(records))
    # true mean 0.6 is inside 3 of 4 intervals; finite mean 0.61 inside [0.5,0.7] and [0.4,0.8] only
    assert "ci vs true mean        0.7500 (3/4" in cov and "ci vs finite mean      0.5000 (2/4" in cov
    # diff intervals are the ci shifted by -0.6: delta 0 inside 3 of 4, finite diff 0.01 inside 2 of 4
    assert "diff vs true delta     0.7500 (3/4" in cov and "diff vs finite diff    0.5000 (2/4" in cov


def test_contract_problems_are_named() -> None:
    samples = [Sample("base", "q", Y_B, P_B, 0.5, 0.5), Sample("v", "q", Y_V, P_V, 0.5, 0.5)]
    out = {"by": "version", "baseline": "base",
           "scorers": [{"scorer": "q", "versions": [{"version": "base", "diff": 0.1, "verdict": None}]}]}  # fmt: skip
    problems = run.contract_problems(out, samples)
    assert any("baseline entry" in p for p in problems) and any(
        "no entry for scorer q version v" in p for p in problems
    )
