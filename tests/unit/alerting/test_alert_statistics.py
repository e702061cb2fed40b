"""Alert aggregates against hand-computed figures (docs/alerts.md has the formulas)."""

from __future__ import annotations

import math

import pytest

from spanscore.alerting.statistics import Sample, estimate, weighted_quantile, z_value


def test_weighted_mean_and_its_interval_by_hand() -> None:
    # two runs scored at p=1 (w=1) with 0.2 and 0.4, one at p=0.5 (w=2) with 0.8:
    # m = (0.2 + 0.4 + 2*0.8) / 4 = 0.55
    # v = (1*(0.2-0.55)^2 + 1*(0.4-0.55)^2 + 4*(0.8-0.55)^2) / 4^2 = (0.1225 + 0.0225 + 0.25) / 16 = 0.0246875
    samples = [Sample(0.2, 1.0), Sample(0.4, 1.0), Sample(0.8, 0.5)]
    found = estimate("mean", samples, 0.95)
    half = 1.959964 * math.sqrt(0.0246875)
    assert found.value == pytest.approx(0.55)
    assert (found.low, found.high) == (pytest.approx(0.55 - half, abs=1e-5), pytest.approx(0.55 + half, abs=1e-5))
    assert found.samples == 3


def test_pass_rate_uses_wilson_over_the_effective_size() -> None:
    # 8 pass, 2 fail, equal weights: rate 0.8, n_eff 10, z 1.96:
    # centre = (0.8 + 3.8416/20) / (1 + 0.38416) = 0.99208/1.38416 = 0.716738
    # half = 1.96/1.38416 * sqrt(0.016 + 3.8416/400) = 1.416021 * 0.160038 = 0.226617
    samples = [Sample(None, 1.0, "pass")] * 8 + [Sample(None, 1.0, "fail")] * 2
    found = estimate("pass_rate", samples, 0.95)
    assert found.value == pytest.approx(0.8)
    assert found.low == pytest.approx(0.716738 - 0.226617, abs=1e-4)
    assert found.high == pytest.approx(0.716738 + 0.226617, abs=1e-4)


def test_count_and_median() -> None:
    # count: w = 1, 2, 4 -> 7 runs; variance (1-1)/1 + (1-0.5)/0.25 + (1-0.25)/0.0625 = 0 + 2 + 12 = 14
    found = estimate("count", [Sample(1.0, 1.0), Sample(1.0, 0.5), Sample(1.0, 0.25)], 0.95)
    assert found.value == 7 and found.high == pytest.approx(7 + z_value(0.95) * math.sqrt(14))
    # weighted median: scores 0.1 (w1), 0.5 (w1), 0.9 (w2): cumulative 1, 2, 4 of 4 -> half reached at 0.5
    assert weighted_quantile([Sample(0.1, 1.0), Sample(0.5, 1.0), Sample(0.9, 0.5)], 0.5) == 0.5


def test_one_sample_has_no_finite_interval() -> None:
    found = estimate("mean", [Sample(0.1, 1.0)], 0.95)
    assert found.value == 0.1 and found.low == -math.inf and found.high == math.inf
