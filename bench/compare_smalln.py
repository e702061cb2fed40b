"""``python -m bench.compare_smalln [--seeds 4000]``: are the version verdicts honest on small versions?

docs/compare.md once measured a family-wise false-positive rate of 0.084 at alpha 0.05 for five scorers on
versions of ~150 scored runs. This bench reproduces that class of case at 20, 50 and 150 scored runs per
version, in process (no CSV, no subprocess), so thousands of seeds take minutes. The populations come from
the blind harness (bench/compare_check/simulate.py: a hidden trait drives both the value and the inclusion
probability, so sampling is informative and rates differ between versions): the baseline is sampled at 25 %
with probability rising with the value, each other version at 10 % falling with it. Per seed and size, one
version equal to the baseline (false positives: any better/worse among its scorers) and one at +0.10 (power:
the share of scorer comparisons that say better). Rates carry a Clopper-Pearson 95 % interval.

Run it on another checkout of spanscore with PYTHONPATH=that/checkout to measure that code's verdicts.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy import stats

from bench.compare_check.simulate import Scorer, Version, simulate
from spanscore.alerting.comparison import Observation, Settings, Sums, compare

SIZES = (20, 30, 50, 150)
EFFECT = 0.10
SCORER_SETS = {
    "one [0,1]": [Scorer("quality", binary=False, mu=0.6)],
    "one pass/fail": [Scorer("pass", binary=True, mu=0.7)],
    "five": [
        Scorer("quality", binary=False, mu=0.6),
        Scorer("tone", binary=False, mu=0.5),
        Scorer("grounded", binary=False, mu=0.4),
        Scorer("pass", binary=True, mu=0.7),
        Scorer("safety", binary=True, mu=0.3),
    ],
}


def _versions(size: int) -> list[Version]:
    return [
        Version("base", runs=int(size / 0.25), rate=0.25, rising=True, delta=0.0),
        Version("null", runs=int(size / 0.10), rate=0.10, rising=False, delta=0.0),
        Version("effect", runs=int(size / 0.10), rate=0.10, rising=False, delta=EFFECT),
    ]


def _one_seed(seed: int, index: int, size: int, scorers: list[Scorer], confidence: float) -> tuple[int, int, int]:
    """(any false verdict on the null version, right verdicts on the effect version, effect comparisons)."""
    rng = np.random.default_rng([seed, index, size])
    groups: dict[str, dict[str, Sums]] = {}
    for smp in simulate(rng, _versions(size), scorers):
        obs = [Observation(float(y), float(p)) for y, p in zip(smp.values, smp.probs, strict=True)]
        if obs:
            groups.setdefault(smp.scorer, {})[smp.version] = Sums.of(obs)
    verdicts = {
        (c.scorer, r.summary.version): r.verdict
        for c in compare(groups, Settings("base", confidence=confidence))
        for r in c.versions
    }
    false = any(verdicts.get((s.name, "null")) in ("better", "worse") for s in scorers)
    right = sum(verdicts.get((s.name, "effect")) == "better" for s in scorers)
    return int(false), right, len(scorers)


def _rate(hits: int, trials: int) -> str:
    low = stats.beta.ppf(0.025, hits, trials - hits + 1) if hits else 0.0
    high = stats.beta.ppf(0.975, hits + 1, trials - hits) if hits < trials else 1.0
    return f"{hits / trials:.3f} ({low:.3f}-{high:.3f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=4000)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--max-seconds", type=float, default=1800.0, help="stop starting new cases after this")
    args = parser.parse_args(argv)
    deadline = time.monotonic() + args.max_seconds
    print(f"confidence {args.confidence}, seeds {args.first_seed}-{args.first_seed + args.seeds - 1}")
    print("| scored runs per version | scorers | seeds | false better/worse (family-wise) | power at +0.10 |")
    print("|---|---|---|---|---|")
    for index, (name, scorers) in enumerate(SCORER_SETS.items()):
        for size in SIZES:
            false = right = total = done = 0
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                if time.monotonic() > deadline:
                    break
                f, r, t = _one_seed(seed, index, size, scorers, args.confidence)
                false, right, total, done = false + f, right + r, total + t, done + 1
            if done:
                print(f"| {size} | {name} | {done} | {_rate(false, done)} | {_rate(right, total)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
