"""The fixed experiment: which versions and scorers each simulated CSV holds, and what each one is for.

One CSV holds a large baseline and many versions compared with it. The contract corrects for multiple
comparisons across the scorers of one version, not across versions, so several versions per call are
several independent-ish trials (they share the baseline's sample) and keep the number of process starts down.
"""

from __future__ import annotations

from bench.compare_check.simulate import Scorer, Version

BASELINE = "base"
EFFECTS = (0.02, 0.05, 0.10, -0.05)

VERSIONS: list[Version] = [
    Version(BASELINE, runs=6000, rate=0.25, rising=True, delta=0.0),
    Version("null_r05_up", runs=3000, rate=0.05, rising=True, delta=0.0),
    Version("null_r10_down", runs=3000, rate=0.10, rising=False, delta=0.0),
    Version("null_r20_up", runs=3000, rate=0.20, rising=True, delta=0.0),
    Version("null_r40_down", runs=3000, rate=0.40, rising=False, delta=0.0),
    *[Version(f"eff_{d:+.2f}", runs=3000, rate=0.10, rising=False, delta=d) for d in EFFECTS],
    Version("tiny_null", runs=200, rate=0.05, rising=True, delta=0.0),
    Version("tiny_eff_+0.10", runs=200, rate=0.05, rising=False, delta=0.10),
]

SCENARIOS: dict[str, list[Scorer]] = {
    "one_score": [Scorer("quality", binary=False, mu=0.6)],
    "one_passfail": [Scorer("pass", binary=True, mu=0.7)],
    "five_scorers": [
        Scorer("quality", binary=False, mu=0.6),
        Scorer("tone", binary=False, mu=0.5),
        Scorer("grounded", binary=False, mu=0.4),
        Scorer("pass", binary=True, mu=0.7),
        Scorer("safety", binary=True, mu=0.3),
    ],
}


def role(version: str) -> str:
    """null: equal to the baseline; effect: differs by a known amount; tiny: about ten scored runs."""
    if version == BASELINE:
        return "baseline"
    return "tiny" if version.startswith("tiny") else ("null" if version.startswith("null") else "effect")
