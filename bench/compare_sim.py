"""``python -m bench.compare_sim [--seeds 1000] [--runs 4000] [--json FILE]``: is the version verdict honest?

Simulates two versions of an agent whose true mean score differs by a known amount. Each version serves
``--runs`` runs; each run is scored with its own inclusion probability (Poisson sampling, as the sampling
rules do), and the two versions are sampled at different rates. Over many seeds it reports how often the
verdict says better/worse when the versions are equal (false positives, must stay at or under
alpha = 1 - confidence), the power at the documented effect sizes, how often the difference's interval
holds the true difference, and how often the answer was too_few. One scenario makes the sampling
informative (failing runs sampled more often), where an unweighted comparison goes wrong: its false positive
rate is shown beside the weighted one. Nothing is asserted; docs/compare.md carries the figures.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from spanscore.alerting.comparison import Observation, Settings, Sums, compare

Rate = Callable[[float], float]
"""A run's inclusion probability from its score: constant, or higher for failing runs."""


@dataclass(frozen=True)
class Scenario:
    name: str
    binary: bool
    base_mean: float
    effect: float
    base_rate: Rate
    new_rate: Rate
    scorers: int = 1
    rates: str = ""


def _population(rng: random.Random, n: int, mean: float, binary: bool) -> list[float]:
    if binary:
        return [float(rng.random() < mean) for _ in range(n)]
    k = 4.0  # beta(mean*k, (1-mean)*k): spread 0.2 around the mean, values in [0, 1]
    return [rng.betavariate(mean * k, (1 - mean) * k) for _ in range(n)]


def _sample(rng: random.Random, values: list[float], rate: Rate) -> list[Observation]:
    out = []
    for value in values:
        p = rate(value)
        if rng.random() < p:
            out.append(Observation(value, p))
    return out


def _one(rng: random.Random, s: Scenario, runs: int, weighted: bool) -> list[tuple[str | None, bool]]:
    """(verdict, interval holds the true difference) per scorer of one simulated day."""
    groups = {}
    for i in range(s.scorers):
        base = _sample(rng, _population(rng, runs, s.base_mean, s.binary), s.base_rate)
        new = _sample(rng, _population(rng, runs, s.base_mean + (s.effect if i == 0 else 0.0), s.binary), s.new_rate)
        if not weighted:
            base, new = [Observation(o.value, 1.0) for o in base], [Observation(o.value, 1.0) for o in new]
        groups[f"s{i}"] = {"a": Sums.of(base), "b": Sums.of(new)}
    out = []
    for i, scorer in enumerate(compare(groups, Settings("a"))):
        entry = scorer.versions[1]
        truth = s.effect if i == 0 else 0.0
        holds = (
            entry.diff_low is not None and entry.diff_high is not None and entry.diff_low <= truth <= entry.diff_high
        )
        out.append((entry.verdict, holds))
    return out


def run(s: Scenario, seeds: int, runs: int, weighted: bool = True, first_seed: int = 0) -> dict[str, object]:
    counts = {"better": 0, "worse": 0, "no_difference": 0, "too_few": 0}
    any_false, holds = 0, 0
    for seed in range(first_seed, first_seed + seeds):
        results = _one(random.Random(seed * 7919 + zlib.crc32(s.name.encode())), s, runs, weighted)
        verdict = results[0][0]
        counts[str(verdict)] += 1
        holds += results[0][1]
        wrong = {"better", "worse"} if s.effect == 0 else {"worse" if s.effect > 0 else "better"}
        any_false += any(v in wrong or (i > 0 and v in ("better", "worse")) for i, (v, _) in enumerate(results))
    right = "better" if s.effect > 0 else "worse"
    return {
        "scenario": s.name,
        "weighted": weighted,
        "effect": s.effect,
        "scorers": s.scorers,
        "rates": s.rates,
        "false_positive_rate": any_false / seeds,
        "power": None if s.effect == 0 else counts[right] / seeds,
        "diff_interval_coverage": holds / seeds,
        "too_few": counts["too_few"] / seeds,
        "no_difference": counts["no_difference"] / seeds,
    }


def _const(p: float) -> Rate:
    return lambda _value: p


def scenarios() -> list[Scenario]:
    fail_first_a: Rate = lambda v: 1.0 if v < 0.5 else 0.3  # noqa: E731 - failing runs always scored
    fail_first_b: Rate = lambda v: 0.5 if v < 0.5 else 0.05  # noqa: E731
    informative = "a: fail 1.0 / pass 0.3; b: fail 0.5 / pass 0.05"
    out = [
        Scenario("pass rate, equal", True, 0.7, 0.0, _const(0.5), _const(0.1), rates="a 0.5, b 0.1"),
        Scenario("score, equal", False, 0.6, 0.0, _const(1.0), _const(0.05), rates="a 1.0, b 0.05"),
        Scenario("pass rate, equal, 3 scorers", True, 0.7, 0.0, _const(0.5), _const(0.1), 3, "a 0.5, b 0.1"),
        Scenario("pass rate, equal, informative", True, 0.7, 0.0, fail_first_a, fail_first_b, rates=informative),
    ]
    for effect in (0.02, 0.05, 0.10):
        out.append(Scenario(f"pass rate +{effect}", True, 0.7, effect, _const(0.5), _const(0.1), rates="a 0.5, b 0.1"))
    for effect in (-0.05, 0.05):
        out.append(Scenario(f"score {effect:+}", False, 0.6, effect, _const(1.0), _const(0.05), rates="a 1.0, b 0.05"))
    out.append(
        Scenario("pass rate +0.05, 3 scorers", True, 0.7, 0.05, _const(0.5), _const(0.1), 3, rates="a 0.5, b 0.1")
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=4000, help="runs each version serves per simulated window")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    parser.add_argument("--only", help="only the scenarios whose name contains this")
    args = parser.parse_args(argv)
    started = time.monotonic()
    chosen = [s for s in scenarios() if args.only is None or args.only in s.name]
    rows = [run(s, args.seeds, args.runs, first_seed=args.first_seed) for s in chosen]
    if args.only is None:
        informative = next(s for s in scenarios() if s.name.endswith("informative"))
        rows.append(run(informative, args.seeds, args.runs, weighted=False))
    seeds = f"{args.first_seed}..{args.first_seed + args.seeds - 1}"
    print(f"seeds {seeds}, runs per version {args.runs}, confidence 0.95 (alpha 0.05), min_effect 0.05\n")
    print("| scenario | sampling rates | weights | false positives | power | diff interval holds truth | too_few |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        power = "" if r["power"] is None else f"{r['power']:.3f}"
        print(
            f"| {r['scenario']} | {r['rates']} | {'Hajek' if r['weighted'] else 'none (naive)'} | "
            f"{r['false_positive_rate']:.3f} | {power} | {r['diff_interval_coverage']:.3f} | {r['too_few']:.3f} |"
        )
    print(f"\n({time.monotonic() - started:.0f} s)", file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(rows, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
