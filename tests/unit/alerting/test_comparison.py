"""The version comparison's figures against statsmodels computing the same estimators another way.

The Hajek mean is the intercept of a weighted least-squares fit on a constant; its linearised variance times
n/(n-1) is that fit's HC1 (sandwich) variance. The difference of two versions is the slope on a version
indicator; with the versions sampled independently its variance is the sum of the two HC1 variances.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_confint

from spanscore.alerting.comparison import (
    MIN_EFFECTIVE,
    Observation,
    Settings,
    Sums,
    VersionSummary,
    compare,
    holm,
    runs_needed,
    summarise,
)


def _t(df: float) -> float:
    return float(stats.t.ppf(0.975, df))


def _df(observations: list[Observation]) -> float:
    """Satterthwaite's degrees of freedom of sum w^2 (y - m)^2: (sum w^2)^2 / sum w^4, less one."""
    weights = [o.weight for o in observations]
    return sum(w * w for w in weights) ** 2 / sum(w**4 for w in weights) - 1


def _welch_df(a: list[Observation], b: list[Observation]) -> float:
    """Welch-Satterthwaite over the two HC1 variances, each with its own degrees of freedom."""
    va, vb = _hc1(a)[1], _hc1(b)[1]
    return (va + vb) ** 2 / (va**2 / _df(a) + vb**2 / _df(b))


def _version(rng: random.Random, n: int, mean: float, rates: tuple[float, ...], binary: bool) -> list[Observation]:
    out = []
    for _ in range(n):
        value = float(rng.random() < mean) if binary else min(1.0, max(0.0, rng.gauss(mean, 0.2)))
        out.append(Observation(value, rng.choice(rates)))
    return out


def _hc1(observations: list[Observation]) -> tuple[float, float]:
    y = np.array([o.value for o in observations])
    fit = sm.WLS(y, np.ones((len(y), 1)), weights=np.array([o.weight for o in observations])).fit(cov_type="HC1")
    return float(fit.params[0]), float(fit.bse[0]) ** 2


@pytest.mark.parametrize("seed", range(5))
def test_weighted_mean_and_interval_match_a_sandwich_wls_fit(seed: int) -> None:
    rng = random.Random(seed)
    observations = _version(rng, 40 + seed * 17, 0.6, (1.0, 0.5, 0.1), binary=False)
    found = summarise("v", Sums.of(observations), Settings("v", bounds=None))
    mean, variance = _hc1(observations)
    assert found.mean == pytest.approx(mean, rel=1e-9)
    assert found.variance == pytest.approx(variance, rel=1e-9)
    half = _t(_df(observations)) * math.sqrt(variance)  # Student t on Satterthwaite's degrees of freedom
    assert (found.ci_low, found.ci_high) == (pytest.approx(mean - half), pytest.approx(mean + half))
    weights = [o.weight for o in observations]
    assert found.n == len(observations)
    assert found.n_eff == pytest.approx(sum(weights) ** 2 / sum(w * w for w in weights))


def test_pass_rate_interval_is_wilson_over_the_effective_size() -> None:
    observations = _version(random.Random(7), 60, 0.8, (1.0, 0.25), binary=True)
    found = summarise("v", Sums.of(observations), Settings("v"))
    low, high = proportion_confint(found.mean * found.n_eff, found.n_eff, alpha=0.05, method="wilson")
    assert (found.ci_low, found.ci_high) == (pytest.approx(low), pytest.approx(high))


@pytest.mark.parametrize("seed", range(5))
def test_difference_under_unequal_sampling_rates_matches_the_regression_slope(seed: int) -> None:
    rng = random.Random(100 + seed)
    base = _version(rng, 80, 0.5, (1.0,), binary=False)  # every run of the baseline scored
    new = _version(rng, 50, 0.6, (0.05, 0.2), binary=False)  # the new version sampled at 5-20 %
    settings = Settings("a", bounds=None)
    [result] = compare({"s": {"a": Sums.of(base), "b": Sums.of(new)}}, settings)
    entry = result.versions[1]
    both = base + new
    y = np.array([o.value for o in both])
    x = sm.add_constant(np.array([0.0] * len(base) + [1.0] * len(new)))
    fit = sm.WLS(y, x, weights=np.array([o.weight for o in both])).fit(cov_type="HC0")
    assert entry.diff == pytest.approx(float(fit.params[1]), rel=1e-9)
    variance = _hc1(base)[1] + _hc1(new)[1]  # independent versions: the per-version HC1 variances add
    hc0 = float(fit.bse[1]) ** 2
    assert hc0 == pytest.approx(variance, rel=0.05)  # HC0 lacks only the n/(n-1) factors
    half = _t(_welch_df(new, base)) * math.sqrt(variance)
    assert (entry.diff_low, entry.diff_high) == (pytest.approx(entry.diff - half), pytest.approx(entry.diff + half))


def test_holm_rejects_what_statsmodels_rejects() -> None:
    rng = random.Random(3)
    for _ in range(15):  # statsmodels takes 30-500 ms a call (40 cases took 21 s in a CI run): few, but varied
        p_values = {f"s{i}": rng.random() ** 3 for i in range(rng.randint(1, 10))}
        expected = multipletests(list(p_values.values()), alpha=0.05, method="holm")[0]
        assert list(holm(p_values, 0.05).values()) == [bool(e) for e in expected]


def test_runs_needed_matches_a_normal_power_solution() -> None:
    # equal per-run spread s in both versions: n = (z_a/2 + z_power)^2 * 2 s^2 / d^2
    a = VersionSummary("a", 50, 50.0, 0.50, 0.0, 1.0, 0.04 / 50)
    b = VersionSummary("b", 50, 50.0, 0.56, 0.0, 1.0, 0.04 / 50)
    expected = NormalIndPower().solve_power(effect_size=0.06 / 0.2, alpha=0.05, power=0.8, ratio=1.0)
    assert runs_needed(0.06, b, a, Settings("a")) == math.ceil(expected)
    assert runs_needed(0.06, b, a, Settings("a"), family=3) > runs_needed(0.06, b, a, Settings("a"))


def _verdict(base: list[Observation], new: list[Observation]) -> tuple[str | None, int | None]:
    [result] = compare({"s": {"1.4.0": Sums.of(base), "1.5.0": Sums.of(new)}}, Settings("1.4.0"))
    assert [r.summary.version for r in result.versions] == ["1.4.0", "1.5.0"]
    assert result.versions[0].verdict is None and result.versions[0].diff is None
    return result.versions[1].verdict, result.versions[1].n_needed


def test_verdicts() -> None:
    rng = random.Random(11)
    assert _verdict(_version(rng, 2000, 0.7, (0.5,), True), _version(rng, 2000, 0.8, (0.1,), True))[0] == "better"
    assert _verdict(_version(rng, 2000, 0.7, (0.5,), True), _version(rng, 2000, 0.6, (0.1,), True))[0] == "worse"
    same = _verdict(_version(rng, 4000, 0.7, (1.0,), False), _version(rng, 4000, 0.7, (0.3,), False))
    assert same == ("no_difference", None)
    verdict, needed = _verdict(_version(rng, 6, 0.4, (1.0,), True), _version(rng, 6, 0.9, (1.0,), True))
    assert verdict == "too_few" and needed is not None and needed > 6


@pytest.mark.parametrize("runs", [4, 15])
def test_fewer_effective_runs_than_the_minimum_get_no_verdict_even_when_far_apart(runs: int) -> None:
    # 15: below 20 effective runs the t test still rejected ~1.5x too often on informative weights
    # (bench/compare_smalln.py, docs/compare.md), so no verdict there either
    base = [Observation(float(i % 2) * 0.5, 1.0) for i in range(runs)]
    new = [Observation(0.5 + float(i % 2) * 0.5, 1.0) for i in range(runs)]
    verdict, needed = _verdict(base, new)
    assert verdict == "too_few" and needed is not None and needed >= MIN_EFFECTIVE


def test_several_scorers_are_corrected_together() -> None:
    # one scorer alone at p ~ 0.03 is "better"; beside four scorers at p ~ 1 Holm asks p <= 0.01 of it
    rng = random.Random(5)
    base = [Observation(float(rng.random() < 0.5), 1.0) for _ in range(400)]
    new = [Observation(float(i < 0.575 * 400), 1.0) for i in range(400)]
    settings = Settings("a", min_effect=0.01)
    a, b = Sums.of(base), Sums.of(new)
    [alone] = compare({"s0": {"a": a, "b": b}}, settings)
    assert alone.versions[1].verdict == "better"
    many = {"s0": {"a": a, "b": b}} | {f"s{i}": {"a": a, "b": a} for i in range(1, 5)}
    assert compare(many, settings)[0].versions[1].verdict != "better"


def test_small_versions_get_student_t_tails_not_normal_ones() -> None:
    # 24 runs a side, the difference 1.99 standard errors: beyond z (1.96), short of t on 46 df (2.013)
    base = [Observation(0.2 + 0.025 * i, 1.0) for i in range(24)]
    se = math.sqrt(2 * _hc1(base)[1])
    shift = 1.99 * se
    new = [Observation(o.value + shift, 1.0) for o in base]
    assert 1.96 < 1.99 < _t(_welch_df(new, base))
    [result] = compare({"s": {"a": Sums.of(base), "b": Sums.of(new)}}, Settings("a", min_effect=0.01))
    entry = result.versions[1]
    assert entry.verdict == "too_few"
    assert entry.diff_low is not None and entry.diff_low < 0 < entry.diff
    half = _t(_welch_df(new, base)) * se
    assert (entry.diff_low, entry.diff_high) == (pytest.approx(shift - half), pytest.approx(shift + half))


def test_too_few_asks_for_more_runs_than_there_are_counting_the_floor_in_effective_runs() -> None:
    """Seen by the blind check: 20 runs of n_eff about 12 were `too_few` with "n_needed 20" beside them."""
    even = [Observation(0.50 + 0.02 * (i % 2), 1.0) for i in range(20)]  # tight: the power formula asks for few
    heavy = [Observation(0.9, 0.1)] * 3 + [Observation(0.6, 1.0)] * 17  # 20 runs, n_eff 7
    verdict, needed = _verdict(even, heavy)
    new = summarise("1.5.0", Sums.of(heavy), Settings("1.4.0"))
    assert verdict == "too_few" and new.n_eff < MIN_EFFECTIVE
    assert needed == math.ceil(MIN_EFFECTIVE * new.n / new.n_eff)  # the floor, counted in this version's runs
    base = summarise("1.4.0", Sums.of(even), Settings("1.4.0"))
    assert runs_needed(0.3, base, base, Settings("1.4.0")) == base.n + 1  # undecided now: always more than present


def test_equal_weight_pass_rates_are_tested_with_the_pooled_two_proportion_statistic() -> None:
    from statsmodels.stats.proportion import proportions_ztest

    from spanscore.alerting.comparison import pass_rate_statistic

    base = [Observation(float(i < 31), 1.0) for i in range(50)]
    new = [Observation(float(i < 40), 1.0) for i in range(60)]
    settings = Settings("a")
    statistic, df = pass_rate_statistic(summarise("b", Sums.of(new), settings), summarise("a", Sums.of(base), settings))
    z, _ = proportions_ztest([40, 31], [60, 50])  # pooled variance: p0 (1 - p0) (1/n1 + 1/n2)
    assert statistic == pytest.approx(z, rel=1e-12)
    assert 49 <= df <= 108  # Welch-Satterthwaite between the smaller side's and both sides' degrees of freedom


def _informative_version(rng: random.Random, runs: int, mixed: bool, scorers: int) -> list[list[Observation]]:
    """``runs`` scored runs of one version; a hidden x in (0, 1) raises each scorer's pass chance (0.61-0.79).

    ``mixed``: x > 0.5 is kept always, the rest one in five (a rule that samples what it worries about less),
    so the rarely kept runs weigh 5 and their values differ from the others'. All scorers score the same runs.
    """
    kept: list[float] = []
    while len(kept) < runs:
        x = rng.random()
        if not mixed or x > 0.5 or rng.random() < 0.2:
            kept.append(x)
    return [
        [Observation(float(rng.random() < 0.7 + 0.18 * (x - 0.5)), 1.0 if not mixed or x > 0.5 else 0.2) for x in kept]
        for _ in range(scorers)
    ]


def test_equal_pass_rates_under_value_linked_sampling_stay_within_alpha_across_ten_scorers() -> None:
    """Seen by the independent small-sample check (s22): pass/fail scorers on 50 runs a version, the new version
    sampled 1.0 / 0.2 by a trait tied to the value, ten scorers at 0.95: 0.098 of equal versions got a false
    better/worse (each scorer twice the rate Holm's first step allows). The Wald variance of each version moved
    with its estimate; the pooled score test does not."""
    rng = random.Random(20261127)
    families, false = 300, 0
    for _ in range(families):
        base = _informative_version(rng, 50, False, 10)
        new = _informative_version(rng, 50, True, 10)
        groups = {f"s{i}": {"a": Sums.of(base[i]), "b": Sums.of(new[i])} for i in range(10)}
        verdicts = [c.versions[1].verdict for c in compare(groups, Settings("a"))]
        false += any(v in ("better", "worse") for v in verdicts)
    assert false / families <= 0.05
