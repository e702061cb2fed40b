"""Reference estimates on the same weighted data, from statsmodels and scipy, to hold the command's figures against.

The Hajek mean is the intercept of a weighted least-squares fit of the values on a constant with weights
1/pi; its sandwich (HC0) variance, sum w^2 (y - mean)^2 / (sum w)^2, is the usual linearisation variance of a
ratio estimator under Poisson sampling, treated as with replacement. The difference between two versions is
the slope on a version indicator in the same kind of fit over both versions' rows, whose HC0 variance is the
sum of the two versions' variances. Variants (HC1, Student t, Wilson on the effective n for pass rates) are
kept side by side, since the contract does not fix the interval and the report says which one the command
follows most closely.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.proportion import proportion_confint


@dataclass(frozen=True)
class Estimate:
    mean: float
    var_hc0: float
    var_hc1: float
    n: int
    n_eff: float  # Kish: (sum w)^2 / sum w^2


def hajek(values: np.ndarray, probs: np.ndarray) -> Estimate:
    """Written out by hand; test_compare_check holds it against statsmodels and a worked example."""
    w = 1.0 / probs
    mean = float(np.sum(w * values) / np.sum(w))
    var = float(np.sum(w**2 * (values - mean) ** 2) / np.sum(w) ** 2)
    n = int(values.size)
    return Estimate(mean, var, var * n / (n - 1) if n > 1 else float("nan"), n, float(np.sum(w) ** 2 / np.sum(w**2)))


def wls_mean(values: np.ndarray, probs: np.ndarray, cov_type: str = "HC0") -> tuple[float, float]:
    """(mean, standard error) from statsmodels: the independent route to the same numbers."""
    fit = sm.WLS(values, np.ones((values.size, 1)), weights=1.0 / probs).fit(cov_type=cov_type)
    return float(fit.params[0]), float(fit.bse[0])


def wls_diff(
    y_v: np.ndarray, p_v: np.ndarray, y_b: np.ndarray, p_b: np.ndarray, cov_type: str = "HC0"
) -> tuple[float, float]:
    """(mean_v - mean_b, standard error) as the indicator's coefficient in one weighted fit."""
    y = np.concatenate([y_b, y_v])
    design = np.column_stack([np.ones(y.size), np.concatenate([np.zeros(y_b.size), np.ones(y_v.size)])])
    fit = sm.WLS(y, design, weights=1.0 / np.concatenate([p_b, p_v])).fit(cov_type=cov_type)
    return float(fit.params[1]), float(fit.bse[1])


def z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2))


def intervals(values: np.ndarray, probs: np.ndarray, confidence: float, binary: bool) -> dict[str, tuple[float, float]]:
    """Each candidate interval for one version's mean, keyed by the method's name."""
    est = hajek(values, probs)
    zq, tq = z(confidence), float(stats.t.ppf(0.5 + confidence / 2, max(est.n - 1, 1)))
    out = {
        "wald_hc0_z": (est.mean - zq * est.var_hc0**0.5, est.mean + zq * est.var_hc0**0.5),
        "wald_hc1_z": (est.mean - zq * est.var_hc1**0.5, est.mean + zq * est.var_hc1**0.5),
        "wald_hc1_t": (est.mean - tq * est.var_hc1**0.5, est.mean + tq * est.var_hc1**0.5),
    }
    if binary:
        low, high = proportion_confint(est.mean * est.n_eff, est.n_eff, alpha=1 - confidence, method="wilson")
        out["wilson_neff"] = (float(low), float(high))
    return out


def diff_intervals(
    y_v: np.ndarray, p_v: np.ndarray, y_b: np.ndarray, p_b: np.ndarray, confidence: float
) -> dict[str, tuple[float, float]]:
    a, b = hajek(y_v, p_v), hajek(y_b, p_b)
    d, zq = a.mean - b.mean, z(confidence)
    se0, se1 = (a.var_hc0 + b.var_hc0) ** 0.5, (a.var_hc1 + b.var_hc1) ** 0.5
    return {"wald_hc0_z": (d - zq * se0, d + zq * se0), "wald_hc1_z": (d - zq * se1, d + zq * se1)}
