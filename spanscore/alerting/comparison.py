"""Versions of an agent compared on sampled live traffic: a weighted mean per version, a difference, a verdict.

Pure arithmetic, no I/O: the CLI (CSV or store), the API and the version alert feed it observations and render
what it returns. Each observation is a score with the inclusion probability p of its run (weight 1/p), as the
alerts weigh them (spanscore.alerting.statistics). docs/compare.md gives the estimators and their assumptions;
in short:

- per version, the Hajek mean with its linearised variance times n/(n-1) (the with-replacement survey
  variance); its interval is Wilson's over Kish's effective n when every value is 0 or 1, else Student t's
  with n_eff - 1 degrees of freedom;
- the difference from the baseline, with the two versions taken as independent samples: the variances add,
  whatever sampling rate each version had, and the degrees of freedom are Welch-Satterthwaite's;
- a two-sided t test per scorer, Holm's step-down over the scorers of one version, so the chance of any false
  better/worse among them stays within 1 - confidence (normal tails rejected too often on small versions);
  for a pass rate (every value 0 or 1 on both sides) the test is the score test that goes with Wilson's
  interval: its standard error is the pooled rate's p0 (1 - p0) over each version's Kish n_eff, not the
  spread of each version's own residuals (which, with a few heavily weighted runs, moves with the estimate
  and rejected equal versions about twice as often as allowed in the tail Holm uses); a verdict also needs
  the reported interval of the difference to leave out 0, so the two never disagree;
- ``too_few`` when a version has fewer than MIN_EFFECTIVE effective runs, or when the test found nothing and
  the interval is still wider than +-min_effect; n_needed is then the runs per version that would detect the
  observed difference (or min_effect, if larger) with POWER at the corrected level.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

from spanscore.alerting import student_t
from spanscore.alerting.statistics import wilson, z_value

MIN_EFFECTIVE = 20.0
"""Fewer effective runs than this in either version: no verdict. Even with t tails, comparisons of 10-20
effective runs under unequal weights rejected equal versions well above alpha (bench/compare_smalln.py)."""
DEFAULT_MIN_EFFECT = 0.05
"""A difference inside +-this is treated as no difference once the interval fits in it (scores on [0, 1])."""
POWER = 0.8
"""The chance n_needed runs per version give of detecting the difference, if it is real."""
VERDICTS = ("better", "worse", "no_difference", "too_few")


@dataclass(frozen=True, slots=True)
class Observation:
    value: float
    probability: float

    @property
    def weight(self) -> float:
        return 1.0 / self.probability


@dataclass(frozen=True, slots=True)
class Sums:
    """What the estimators need of one version's scores, so a store can add them up without sending rows.

    Over the n scores y with weights w: sum(w), sum(w^2), sum(w*y), sum(w^2*y), sum(w^2*y^2), and whether every
    y was 0 or 1 (a pass rate, which gets Wilson's interval); sum(w^4) gives the variance's degrees of freedom,
    None where a store does not have it for every score (then Kish's n_eff - 1 stands in).
    """

    n: int
    w: float
    w2: float
    wy: float
    w2y: float
    w2y2: float
    binary: bool
    w4: float | None = None

    @classmethod
    def of(cls, observations: Sequence[Observation]) -> Sums:
        weights = [o.weight for o in observations]
        values = [o.value for o in observations]
        return cls(
            n=len(values),
            w=sum(weights),
            w2=sum(w * w for w in weights),
            wy=sum(w * y for w, y in zip(weights, values, strict=True)),
            w2y=sum(w * w * y for w, y in zip(weights, values, strict=True)),
            w2y2=sum(w * w * y * y for w, y in zip(weights, values, strict=True)),
            binary=all(y in (0.0, 1.0) for y in values),
            w4=sum(w**4 for w in weights),
        )

    def hajek(self) -> tuple[float, float]:
        """The Hajek mean and its linearised variance, as statistics.hajek computes them from the rows."""
        mean = self.wy / self.w
        spread = self.w2y2 - 2 * mean * self.w2y + mean * mean * self.w2
        return mean, max(0.0, spread) / self.w**2


@dataclass(frozen=True, slots=True)
class VersionSummary:
    """One version's weighted mean for one scorer; ``variance`` is the mean's (None below two runs)."""

    version: str
    n: int
    n_eff: float
    mean: float
    ci_low: float
    ci_high: float
    variance: float | None
    df: float | None = None
    """Degrees of freedom of ``variance`` (degrees_of_freedom); None is Kish's n_eff - 1."""


@dataclass(frozen=True, slots=True)
class VersionResult:
    summary: VersionSummary
    diff: float | None = None
    diff_low: float | None = None
    diff_high: float | None = None
    verdict: str | None = None
    n_needed: int | None = None


@dataclass(frozen=True, slots=True)
class ScorerComparison:
    scorer: str
    versions: list[VersionResult]


@dataclass(frozen=True, slots=True)
class Settings:
    baseline: str
    confidence: float = 0.95
    min_effect: float = DEFAULT_MIN_EFFECT
    bounds: tuple[float, float] | None = (0.0, 1.0)
    """The range values can take: intervals are clipped to it, and it stands in for an unknown variance."""


def summarise(version: str, sums: Sums, settings: Settings) -> VersionSummary:
    """Hajek mean, interval, n and Kish n_eff of one version's scores (at least one)."""
    n = sums.n
    n_eff = sums.w**2 / sums.w2
    mean, variance = sums.hajek()
    if n < 2:
        low, high = settings.bounds or (-math.inf, math.inf)
        return VersionSummary(version, n, n_eff, mean, low, high, None)
    variance *= n / (n - 1)
    if sums.binary:
        low, high = wilson(mean, n_eff, z_value(settings.confidence))
    else:
        half = student_t.quantile(settings.confidence, degrees_of_freedom(sums)) * math.sqrt(variance)
        low, high = _clip(mean - half, mean + half, settings.bounds)
    return VersionSummary(version, n, n_eff, mean, low, high, variance, degrees_of_freedom(sums))


def compare(groups: Mapping[str, Mapping[str, Sums]], settings: Settings) -> list[ScorerComparison]:
    """Every scorer's versions against the baseline; ``groups`` is scorer -> version -> sums of its scores.

    Scorers and versions come out sorted, the baseline first among a scorer's versions.
    """
    summaries = {
        scorer: [
            summarise(v, obs, settings)
            for v, obs in sorted(versions.items(), key=lambda item: (item[0] != settings.baseline, item[0]))
            if obs.n
        ]
        for scorer, versions in sorted(groups.items())
    }
    tests = _tests(summaries, groups, settings)
    rejected = _holm_by_version(tests, 1 - settings.confidence)
    family = _family_sizes(tests)
    out = []
    for scorer, rows in summaries.items():
        base = next((s for s in rows if s.version == settings.baseline), None)
        results = [
            VersionResult(summary)
            if summary.version == settings.baseline
            else _against(summary, base, settings, rejected.get((scorer, summary.version)), family)
            for summary in rows
        ]
        out.append(ScorerComparison(scorer, results))
    return out


def degrees_of_freedom(sums: Sums) -> float:
    """Satterthwaite's degrees of freedom of a version's variance sum w_i^2 (y_i - m)^2, at least 1.

    Taking each run's squared residual to have the same spread, the variance is a weighted sum of n chi-squares
    with weights w_i^2, whose degrees of freedom are (sum w^2)^2 / sum w^4, less one for the estimated mean: n - 1
    when every weight is equal, fewer when a few heavily weighted runs carry it. Without sum w^4, Kish's
    n_eff - 1, a looser count (bench/compare_smalln.py measured it too ready on informative weights).
    """
    if sums.w4:
        return max(1.0, sums.w2 * sums.w2 / sums.w4 - 1.0)
    return max(1.0, sums.w * sums.w / sums.w2 - 1.0)


def welch_degrees(a: VersionSummary, b: VersionSummary) -> float:
    """Welch-Satterthwaite degrees of freedom of the difference's variance v_a + v_b."""
    va, vb = a.variance or 0.0, b.variance or 0.0
    df_a = a.df if a.df is not None else max(1.0, a.n_eff - 1.0)
    df_b = b.df if b.df is not None else max(1.0, b.n_eff - 1.0)
    denominator = va * va / df_a + vb * vb / df_b
    if denominator <= 0:
        return df_a + df_b
    return (va + vb) ** 2 / denominator


def _testable(summary: VersionSummary) -> bool:
    return summary.variance is not None and summary.n_eff >= MIN_EFFECTIVE


def _tests(
    summaries: Mapping[str, list[VersionSummary]], groups: Mapping[str, Mapping[str, Sums]], settings: Settings
) -> dict[tuple[str, str], float]:
    """(scorer, version) -> two-sided p value, for every comparison with enough runs on both sides."""
    tests: dict[tuple[str, str], float] = {}
    for scorer, rows in summaries.items():
        base = next((s for s in rows if s.version == settings.baseline), None)
        if base is None or not _testable(base):
            continue
        for summary in rows:
            if summary.version == settings.baseline or not _testable(summary):
                continue
            diff = summary.mean - base.mean
            if not (groups[scorer][summary.version].binary and groups[scorer][base.version].binary):
                tests[(scorer, summary.version)] = _p_value(diff, _se(summary, base), welch_degrees(summary, base))
            elif _diff_excludes_zero(diff, summary, base, settings):
                tests[(scorer, summary.version)] = _pass_rate_p_value(summary, base)
            else:  # the interval shown beside the verdict includes no difference: no verdict either
                tests[(scorer, summary.version)] = 1.0
    return tests


def pass_rate_statistic(a: VersionSummary, b: VersionSummary) -> tuple[float, float]:
    """The score test of two weighted pass rates, a against b: its statistic and degrees of freedom.

    Under equal rates each version's variance is p0 (1 - p0) / n_eff, p0 the rates pooled over both versions'
    effective runs: with equal weights, the classical pooled two-proportion statistic. Its tails are Student
    t's on the Welch-Satterthwaite degrees of freedom of these two variances, each with its version's own.
    """
    pooled = (a.n_eff * a.mean + b.n_eff * b.mean) / (a.n_eff + b.n_eff)
    null_a = replace(a, variance=pooled * (1 - pooled) / a.n_eff)
    null_b = replace(b, variance=pooled * (1 - pooled) / b.n_eff)
    se = _se(null_a, null_b)
    statistic = (
        (a.mean - b.mean) / se if se > 0 else (0.0 if a.mean == b.mean else math.copysign(math.inf, a.mean - b.mean))
    )
    return statistic, welch_degrees(null_a, null_b)


def _pass_rate_p_value(a: VersionSummary, b: VersionSummary) -> float:
    statistic, df = pass_rate_statistic(a, b)
    return 0.0 if math.isinf(statistic) else student_t.two_sided_p(statistic, df)


def _diff_excludes_zero(diff: float, a: VersionSummary, b: VersionSummary, settings: Settings) -> bool:
    low, high = _diff_interval(diff, a, b, Settings(settings.baseline, settings.confidence, bounds=None))
    return low > 0 or high < 0


def _se(a: VersionSummary, b: VersionSummary) -> float:
    return math.sqrt((a.variance or 0.0) + (b.variance or 0.0))


def _p_value(diff: float, se: float, df: float) -> float:
    if se == 0:
        return 0.0 if diff != 0 else 1.0
    return student_t.two_sided_p(diff / se, df)


def holm(p_values: Mapping[str, float], alpha: float) -> dict[str, bool]:
    """Holm's step-down: which hypotheses are rejected with the family-wise error rate held at ``alpha``."""
    ordered = sorted(p_values.items(), key=lambda item: item[1])
    rejected = {key: False for key in p_values}
    for rank, (key, p) in enumerate(ordered):
        if p > alpha / (len(ordered) - rank):
            break
        rejected[key] = True
    return rejected


def _holm_by_version(tests: Mapping[tuple[str, str], float], alpha: float) -> dict[tuple[str, str], bool]:
    """One Holm family per version: the scorers it was compared on."""
    rejected: dict[tuple[str, str], bool] = {}
    for version in {v for _, v in tests}:
        family = {scorer: p for (scorer, v), p in tests.items() if v == version}
        rejected.update({(scorer, version): r for scorer, r in holm(family, alpha).items()})
    return rejected


def _family_sizes(tests: Mapping[tuple[str, str], float]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for _, version in tests:
        sizes[version] = sizes.get(version, 0) + 1
    return sizes


def _against(
    summary: VersionSummary,
    base: VersionSummary | None,
    settings: Settings,
    rejected: bool | None,
    family: Mapping[str, int],
) -> VersionResult:
    """One version's difference from the baseline and its verdict; ``rejected`` is None when it was not tested."""
    if base is None:
        return VersionResult(summary, verdict="too_few", n_needed=int(MIN_EFFECTIVE))
    diff = summary.mean - base.mean
    low, high = _diff_interval(diff, summary, base, settings)
    if rejected:
        return VersionResult(summary, diff, low, high, "better" if diff > 0 else "worse")
    if rejected is not None and -settings.min_effect < low and high < settings.min_effect:
        return VersionResult(summary, diff, low, high, "no_difference")
    needed = runs_needed(diff, summary, base, settings, family.get(summary.version, 1))
    return VersionResult(summary, diff, low, high, "too_few", needed)


def _diff_interval(diff: float, a: VersionSummary, b: VersionSummary, settings: Settings) -> tuple[float, float]:
    span = None if settings.bounds is None else settings.bounds[1] - settings.bounds[0]
    limits = None if span is None else (-span, span)
    if a.variance is None or b.variance is None:
        return limits or (-math.inf, math.inf)
    half = student_t.quantile(settings.confidence, welch_degrees(a, b)) * _se(a, b)
    return _clip(diff - half, diff + half, limits)


def runs_needed(diff: float, a: VersionSummary, b: VersionSummary, settings: Settings, family: int = 1) -> int:
    """Runs per version for a two-sided test at (1-confidence)/family to detect |diff| with POWER.

    n = (z_{1-alpha/2} + z_power)^2 * (s_a^2 + s_b^2) / d^2, with s^2 = n * variance the per-run spread of
    each version (sampling weights included) and d = max(|diff|, min_effect); at least the runs that reach the
    floor of MIN_EFFECTIVE effective runs, and always more than the smaller version has (it is undecided now).
    """
    alpha = (1 - settings.confidence) / max(1, family)
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(POWER)
    spread = _per_run_variance(a, settings) + _per_run_variance(b, settings)
    if spread <= 0:
        pooled = (a.mean + b.mean) / 2
        spread = 2 * max(pooled * (1 - pooled), 0.01)
    effect = max(abs(diff), settings.min_effect)
    return max(math.ceil(z * z * spread / (effect * effect)), _floor_in_runs(a, b), min(a.n, b.n) + 1)


def _floor_in_runs(a: VersionSummary, b: VersionSummary) -> int:
    """Runs per version that reach MIN_EFFECTIVE effective runs at each version's present ratio of runs to n_eff.

    The floor counts effective runs and n_needed counts runs: with unequal weights (n_eff below n) 20 runs are
    not 20 effective ones, and "20 needed" beside 20 present read as a contradiction.
    """
    ratio = max(x.n / x.n_eff if x.n_eff > 0 else 1.0 for x in (a, b))
    return math.ceil(MIN_EFFECTIVE * max(1.0, ratio) - 1e-9)


def _per_run_variance(summary: VersionSummary, settings: Settings) -> float:
    if summary.variance is not None:
        return summary.n * summary.variance
    span = 1.0 if settings.bounds is None else settings.bounds[1] - settings.bounds[0]
    return span * span / 4  # the largest variance a value in the bounds can have


def _clip(low: float, high: float, bounds: tuple[float, float] | None) -> tuple[float, float]:
    if bounds is None:
        return low, high
    return max(bounds[0], low), min(bounds[1], high)
