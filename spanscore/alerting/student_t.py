"""Student's t distribution with fractional degrees of freedom, for the comparison's small-sample tails.

A weighted mean of a few dozen runs divided by its estimated standard error is not normal: the standard error
is itself a noisy estimate, and normal (z) tails then reject too often (docs/compare.md measured a family-wise
rate of 0.084 at alpha 0.05 on versions of ~150 runs before these tails). Welch-Satterthwaite degrees of
freedom are fractional, so the distribution is computed from the regularised incomplete beta function rather
than from a table; pure Python, so the CLI, API and alert need no numerical library. Agreement with scipy is
tested to about 1e-12 (tests/unit/alerting/test_student_t.py).
"""

from __future__ import annotations

import math
from statistics import NormalDist

NORMAL_BEYOND = 1e7
"""Degrees of freedom beyond which the normal distribution is used: the two differ by less than 1e-7 there."""
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), evaluated by Lentz's method (converges fast for x < (a+1)/(a+b+2))."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    result = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return result


def _log_gamma_half_ratio(a: float) -> float:
    """log(Gamma(a + 1/2) / Gamma(a)), without the cancellation two large lgamma values suffer at large a.

    Stirling's series for both terms, with the leading parts combined exactly: (a) log(a + 1/2) - (a - 1/2)
    log(a) - 1/2 = a log1p(1 / (2a)) + log(a) / 2 - 1/2, plus the difference of the two series' tails.
    """
    if a < 10:
        return math.lgamma(a + 0.5) - math.lgamma(a)

    def tail(z: float) -> float:
        return 1 / (12 * z) - 1 / (360 * z**3) + 1 / (1260 * z**5) - 1 / (1680 * z**7)

    return a * math.log1p(0.5 / a) + 0.5 * math.log(a) - 0.5 + tail(a + 0.5) - tail(a)


def _upper_tails(t: float, df: float) -> float:
    """P(|T| >= |t|) = I_x(df/2, 1/2) with x = df / (df + t^2), its logarithms taken without cancellation."""
    if t == 0:
        return 1.0
    a, ratio = df / 2, t * t / df
    x = 1 / (1 + ratio)
    log_front = _log_gamma_half_ratio(a) - 0.5 * math.log(math.pi) - a * math.log1p(ratio) + 0.5 * math.log(ratio * x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + 2.5):
        return front * _beta_fraction(a, 0.5, x) / a
    return 1.0 - front * _beta_fraction(0.5, a, ratio * x) / 0.5


def two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for T with ``df`` degrees of freedom."""
    if df >= NORMAL_BEYOND:
        return 2 * (1 - NormalDist().cdf(abs(t)))
    return _upper_tails(t, df)


def _density(t: float, df: float) -> float:
    log_norm = _log_gamma_half_ratio(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


def quantile(confidence: float, df: float) -> float:
    """The t with P(|T| <= t) = confidence: the half-width multiplier of a two-sided interval.

    Newton's method on the upper tail from the normal quantile, which lies below the answer: the tail is convex
    and decreasing there, so the steps rise monotonically onto the root without overshooting.
    """
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    if df >= NORMAL_BEYOND:
        return z
    target = 1 - confidence
    t = z
    for _ in range(200):
        step = (two_sided_p(t, df) - target) / (2 * _density(t, df))
        t += step
        if abs(step) <= 1e-13 * max(1.0, t):
            break
    return t
