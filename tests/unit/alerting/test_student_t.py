"""The hand-written Student t (spanscore.alerting.student_t) against scipy, fractional degrees of freedom included."""

from __future__ import annotations

import pytest
from scipy import stats

from spanscore.alerting.student_t import quantile, two_sided_p

DEGREES = [0.5, 1.0, 1.7, 2.0, 3.0, 4.7, 9.0, 19.0, 20.5, 29.3, 49.0, 148.2, 1000.0, 1e5]


@pytest.mark.parametrize("df", DEGREES)
@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_quantile_matches_scipy(df: float, confidence: float) -> None:
    assert quantile(confidence, df) == pytest.approx(float(stats.t.ppf(0.5 + confidence / 2, df)), rel=1e-12)


@pytest.mark.parametrize("df", DEGREES)
@pytest.mark.parametrize("t", [0.0, 0.1, -1.0, 2.0, 5.0, -30.0])
def test_two_sided_p_matches_scipy(df: float, t: float) -> None:
    assert two_sided_p(t, df) == pytest.approx(2 * float(stats.t.sf(abs(t), df)), rel=1e-11, abs=1e-15)


def test_very_many_degrees_of_freedom_are_normal() -> None:
    assert quantile(0.95, 1e6) == pytest.approx(float(stats.t.ppf(0.975, 1e6)), rel=1e-10)
    assert quantile(0.95, 1e9) == pytest.approx(float(stats.norm.ppf(0.975)), rel=1e-12)
