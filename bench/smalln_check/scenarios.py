"""The small-sample scenarios of the blind check of issue #41's verdicts (contract C2), and their split.

Written from the issue text and C2 alone. A scenario fixes the scored rows per version (n), the number of
scorers compared at once (k), the kind of score, how the baseline and the versions were sampled, the
confidence, and the true effect of the non-baseline versions (0 for the false-positive scenarios). One call
of the command holds a baseline and several versions; each version is one trial of the "any false
better/worse among this version's scorers" event, the family the contract bounds by 1 - confidence.

`python -m bench.smalln_check.scenarios` writes dev.json and held.json: a seeded draw puts a third of the
scenarios in held.json before anything is run; nothing is tuned on them and their results are read last.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).parent
SPLIT_SEED = 20261127
NULL_VERSIONS = 10  # equal versions per call (they share the baseline's sample)
EFFECTS = (0.05, 0.10, 0.20, -0.05, -0.10, -0.20)

KINDS = ["passfail", "beta_mid", "skewed", "ties", "zero_one", "passfail_high", "mix"]
SAMPLINGS = ["equal", "b1_v01", "b01_v1", "mixed", "mixed_vs_1", "smooth"]
CONFIDENCES = [0.90, 0.95, 0.99]


def null_scenarios() -> list[dict[str, object]]:
    """A balanced rotation over kinds, samplings and confidences for every (n, k) pair, twice."""
    out = []
    i = 0
    per_k = {1: 0, 3: 0, 5: 0, 10: 0}
    for n in (10, 20, 50, 150):
        for k in (1, 3, 5, 10):
            for _ in range(2):
                kinds = KINDS[:-1] if k == 1 else KINDS
                kind = kinds[(per_k[k] + (k if k > 1 else 0)) % len(kinds)]
                per_k[k] += 1
                sampling = SAMPLINGS[i % len(SAMPLINGS)]
                conf = CONFIDENCES[(i + i // len(SAMPLINGS)) % len(CONFIDENCES)]
                out.append({"n": n, "k": k, "kind": kind, "sampling": sampling, "confidence": conf, "effect": 0.0})
                i += 1
    # The earlier check's finding, restated in this design: five scorers on ~150 rows, value-linked sampling.
    out += [
        {"n": 150, "k": 5, "kind": "mix", "sampling": "smooth", "confidence": c, "effect": 0.0} for c in (0.90, 0.95)
    ]
    return out


def power_scenarios() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for n in (50, 150):
        for kind in ("passfail", "beta_mid", "ties"):
            out.append({"n": n, "k": 1, "kind": kind, "sampling": "equal", "confidence": 0.95, "effect": "power"})
        out.append({"n": n, "k": 5, "kind": "mix_mid", "sampling": "b1_v01", "confidence": 0.95, "effect": "power"})
        out.append({"n": n, "k": 1, "kind": "beta_mid", "sampling": "mixed", "confidence": 0.90, "effect": "power"})
    return out


def all_scenarios() -> list[dict[str, object]]:
    scen = null_scenarios() + power_scenarios()
    for idx, s in enumerate(scen):
        s["id"] = f"s{idx:02d}_n{s['n']}_k{s['k']}_{s['kind']}_{s['sampling']}_c{s['confidence']}" + (
            "_power" if s["effect"] == "power" else ""
        )
    return scen


def split() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    scen = all_scenarios()
    held_idx = set(random.Random(SPLIT_SEED).sample(range(len(scen)), len(scen) // 3))
    return [s for i, s in enumerate(scen) if i not in held_idx], [s for i, s in enumerate(scen) if i in held_idx]


if __name__ == "__main__":
    dev, held = split()
    (HERE / "dev.json").write_text(json.dumps(dev, indent=1) + "\n")
    (HERE / "held.json").write_text(json.dumps(held, indent=1) + "\n")
    print(f"{len(dev)} dev scenarios, {len(held)} held back", file=sys.stderr)
