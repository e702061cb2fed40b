"""Code-scorer throughput: spanscore vs @mastra/evals 1.10.2 on node, same golden cases, one run.

Scores every case of tests/fixtures/golden (all six code scorers, 2,420 cases)
with spanscore's scorers in this process, then runs bench/scorers/reference.mjs
in bench mode, which scores the same cases with the reference on node, and
prints both rates and their ratio as JSON. Both sides build their scorers and
runs before the clock starts and count every attempt, errors included.

Usage: python bench/scorers/throughput.py [--python-rounds 5] [--node-rounds 1]
(needs `npm ci` in bench/scorers first).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from tests.golden import load_cases

ROOT = Path(__file__).resolve().parents[2]


def python_rate(rounds: int) -> dict[str, object]:
    cases = load_cases(ROOT / "tests" / "fixtures" / "golden")
    for case in cases:  # warm-up: loads lexicons and fills the lemma cache once, as a long-lived worker would
        case.scorer.run(case.run)
    per_scorer: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    start = time.perf_counter()
    for _ in range(rounds):
        for case in cases:
            t0 = time.perf_counter()
            case.scorer.run(case.run)
            per_scorer[case.scorer_name] += time.perf_counter() - t0
            counts[case.scorer_name] += 1
    seconds = time.perf_counter() - start
    return {
        "cases": len(cases) * rounds,
        "rounds": rounds,
        "seconds": seconds,
        "cases_per_second": len(cases) * rounds / seconds,
        "per_scorer_cases_per_second": {k: counts[k] / v for k, v in sorted(per_scorer.items())},
    }


def node_rate(rounds: int) -> dict[str, object]:
    script = Path(__file__).with_name("reference.mjs")
    done = subprocess.run(
        ["node", str(script), "bench", str(rounds)], check=True, capture_output=True, text=True, cwd=script.parent
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python-rounds", type=int, default=5)
    parser.add_argument("--node-rounds", type=int, default=1)
    args = parser.parse_args()
    python = python_rate(args.python_rounds)
    node = node_rate(args.node_rounds)
    ratio = float(python["cases_per_second"]) / float(node["cases_per_second"])  # type: ignore[arg-type]
    print(json.dumps({"python": python, "node": node, "ratio": round(ratio, 1)}, indent=2))
    return 0 if ratio >= 10 else 1


if __name__ == "__main__":
    sys.exit(main())
