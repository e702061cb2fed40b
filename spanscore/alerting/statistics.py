"""Aggregates of sampled scores with a confidence interval, so an alert fires on a real drop, not on noise.

Every score carries the inclusion probability of its run (``SampleRate``, p). A run scored at p stands for
w = 1/p runs. Over the n scores of a window:

- **mean**: the ratio (Hajek) estimator  m = sum(w*y) / sum(w), with the linearised variance
  v = sum(w^2 * (y - m)^2) / sum(w)^2 and the normal interval m +- z*sqrt(v). With equal weights this is the
  ordinary mean with variance sum((y - m)^2) / n^2, i.e. the plug-in s^2/n.
- **pass_rate**: the same estimator of the share of ``pass`` labels, with a Wilson interval over the effective
  sample size n_eff = sum(w)^2 / sum(w^2) (Kish), which stays inside [0, 1] and behaves at rates near 0 or 1.
- **p50**: the weighted median; its interval takes the weighted quantiles at 0.5 -+ z*sqrt(0.25 / n_eff)
  (Woodruff's interval, from the binomial spread of the share below the median).
- **count**: the estimated number of runs scored, sum(w), with the Horvitz-Thompson variance of a Poisson
  sample sum((1 - p) / p^2); exact (zero width) when every p is 1.

z is the two-sided normal quantile of the alert's confidence (1.96 at 0.95).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist


@dataclass(frozen=True, slots=True)
class Sample:
    score: float | None
    sample_rate: float
    label: str = ""

    @property
    def weight(self) -> float:
        return 1.0 / self.sample_rate if self.sample_rate > 0 else 1.0


@dataclass(frozen=True, slots=True)
class Estimate:
    value: float | None
    low: float | None
    high: float | None
    samples: int


def z_value(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def estimate(aggregate: str, samples: Sequence[Sample], confidence: float) -> Estimate:
    z = z_value(confidence)
    if aggregate == "count":
        return _count(samples, z)
    if aggregate == "pass_rate":
        return _pass_rate([s for s in samples if s.label in ("pass", "fail")], z)
    scored = [s for s in samples if s.score is not None]
    if aggregate == "p50":
        return _median(scored, z)
    return _mean(scored, z)


def _mean(samples: Sequence[Sample], z: float) -> Estimate:
    if not samples:
        return Estimate(None, None, None, 0)
    mean, variance = hajek([s.weight for s in samples], [float(s.score) for s in samples if s.score is not None])
    half = z * math.sqrt(variance) if len(samples) > 1 else math.inf
    return Estimate(mean, mean - half, mean + half, len(samples))


def hajek(weights: Sequence[float], values: Sequence[float]) -> tuple[float, float]:
    """The ratio (Hajek) mean sum(w*y)/sum(w) and its linearised variance sum(w^2 (y-m)^2) / sum(w)^2.

    Shared by the alerts and the version comparison (spanscore.alerting.comparison), so both weigh a sampled
    run the same way. The caller needs at least one value.
    """
    total = sum(weights)
    mean = sum(w * y for w, y in zip(weights, values, strict=True)) / total
    variance = sum(w * w * (y - mean) ** 2 for w, y in zip(weights, values, strict=True)) / total**2
    return mean, variance


def effective_size(weights: Sequence[float]) -> float:
    return sum(weights) ** 2 / sum(w * w for w in weights) if weights else 0.0


def wilson(rate: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's interval for a share ``rate`` seen over ``n`` (effective) runs: stays in [0, 1], sane near 0 or 1."""
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _pass_rate(samples: Sequence[Sample], z: float) -> Estimate:
    if not samples:
        return Estimate(None, None, None, 0)
    weights = [s.weight for s in samples]
    rate = sum(w for s, w in zip(samples, weights, strict=True) if s.label == "pass") / sum(weights)
    low, high = wilson(rate, effective_size(weights), z)
    return Estimate(rate, low, high, len(samples))


def weighted_quantile(samples: Sequence[Sample], q: float) -> float:
    """The smallest score whose weighted share of scores at or below it reaches ``q``."""
    ordered = sorted(samples, key=lambda s: s.score)  # type: ignore[arg-type, return-value]
    total = sum(s.weight for s in ordered)
    running = 0.0
    for sample in ordered:
        running += sample.weight
        if running >= q * total - 1e-12:
            return float(sample.score)  # type: ignore[arg-type]
    return float(ordered[-1].score)  # type: ignore[arg-type]


def _median(samples: Sequence[Sample], z: float) -> Estimate:
    if not samples:
        return Estimate(None, None, None, 0)
    n = effective_size([s.weight for s in samples])
    spread = z * math.sqrt(0.25 / n)
    low = weighted_quantile(samples, max(0.0, 0.5 - spread))
    high = weighted_quantile(samples, min(1.0, 0.5 + spread))
    return Estimate(weighted_quantile(samples, 0.5), low, high, len(samples))


def _count(samples: Sequence[Sample], z: float) -> Estimate:
    total = sum(s.weight for s in samples)
    variance = sum((1 - min(1.0, s.sample_rate)) / s.sample_rate**2 for s in samples if s.sample_rate > 0)
    half = z * math.sqrt(variance)
    return Estimate(total, max(0.0, total - half), total + half, len(samples))
