"""Populations of runs with known true means, sampled for scoring the way live rules do (issue #41).

Each run has a hidden trait x ~ U(0, 1). A scorer's expected value is mu + SLOPE * (x - 0.5), so its true
(super-population) mean is exactly mu. Runs are scored with a probability that also grows, or shrinks, with x:
pi = rate * (0.25 + 1.5 x) or rate * (1.75 - 1.5 x), whose average is `rate`. Within a version the inclusion
probability therefore tracks the value, and an unweighted mean of the scored runs is off by about
+-SLOPE * 1.5 / 12 = +-0.0375; only a sampling-weighted estimate recovers mu.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SLOPE = 0.3
BETA_CONCENTRATION = 6.0


@dataclass(frozen=True)
class Scorer:
    name: str
    binary: bool  # pass/fail (0 or 1) when true, else a score in [0, 1]
    mu: float  # true mean on the baseline


@dataclass(frozen=True)
class Version:
    name: str
    runs: int  # size of the version's population of runs
    rate: float  # average inclusion probability
    rising: bool  # inclusion probability rises with the value (else falls)
    delta: float  # true mean minus the baseline's, the same for every scorer


@dataclass
class Sample:
    """The scored runs of one (version, scorer) plus the truths they are judged against."""

    version: str
    scorer: str
    values: np.ndarray
    probs: np.ndarray
    true_mean: float  # super-population mean: what future traffic of this version would average
    finite_mean: float  # mean over every run of the version, scored or not


def inclusion(x: np.ndarray, rate: float, rising: bool) -> np.ndarray:
    shape = 0.25 + 1.5 * x if rising else 1.75 - 1.5 * x
    return np.clip(rate * shape, 1e-3, 1.0)


def draw_values(rng: np.random.Generator, x: np.ndarray, mu: float, binary: bool) -> np.ndarray:
    expected = mu + SLOPE * (x - 0.5)
    if not (0 < expected.min() and expected.max() < 1):
        raise ValueError(f"mean {mu} leaves (0, 1) for some runs; keep mu within [0.2, 0.8] minus the effect")
    if binary:
        return (rng.random(x.size) < expected).astype(float)
    return rng.beta(expected * BETA_CONCENTRATION, (1 - expected) * BETA_CONCENTRATION)


def simulate(rng: np.random.Generator, versions: list[Version], scorers: list[Scorer]) -> list[Sample]:
    """Every scorer samples every run of a version on its own (separate rules), with the version's pi(x)."""
    samples = []
    for v in versions:
        x = rng.random(v.runs)
        pi = inclusion(x, v.rate, v.rising)
        for s in scorers:
            y = draw_values(rng, x, s.mu + v.delta, s.binary)
            keep = rng.random(v.runs) < pi
            samples.append(Sample(v.name, s.name, y[keep], pi[keep], s.mu + v.delta, float(y.mean())))
    return samples


def write_csv(path: Path, samples: list[Sample]) -> None:
    """Contract C2's CSV: version,scorer,value,inclusion_probability (repr keeps every float exactly)."""
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["version", "scorer", "value", "inclusion_probability"])
        for s in samples:
            for value, prob in zip(s.values.tolist(), s.probs.tolist(), strict=True):
                out.writerow([s.version, s.scorer, repr(value), repr(prob)])
