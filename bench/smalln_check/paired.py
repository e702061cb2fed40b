"""Verdict by verdict, before against after on the very same CSVs (same scenario, seed, version, scorer).

    .venv/bin/python -m bench.smalln_check.paired /tmp/dev_before.jsonl /tmp/dev_after.jsonl

Prints the transition counts on equal versions and on effect versions, and whether n, n_eff, mean and diff
moved (they should not if only the test changed) and how much the difference intervals widened.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def load(path: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    out = {}
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        if "verdict" in r:
            out[(r["scenario"], r["seed"], r["version"], r["scorer"])] = r
    return out


def main() -> None:
    before, after = load(sys.argv[1]), load(sys.argv[2])
    keys = sorted(before.keys() & after.keys())
    print(f"paired comparisons: {len(keys)} (before only {len(before.keys() - after.keys())}, "
          f"after only {len(after.keys() - before.keys())})")  # fmt: skip
    for label, pick in (("equal versions", lambda r: r["delta"] == 0), ("effect versions", lambda r: r["delta"] != 0)):
        moves = Counter((before[k]["verdict"], after[k]["verdict"]) for k in keys if pick(before[k]))
        print(f"\n{label}: before -> after")
        for (b, a), c in sorted(moves.items(), key=lambda x: -x[1]):
            print(f"  {b:>13} -> {a:<13} {c}")
    moved = {f: max((abs((after[k][f] or 0) - (before[k][f] or 0)) for k in keys), default=0.0)
             for f in ("n", "n_eff", "mean", "diff")}  # fmt: skip
    print(f"\nlargest change of n / n_eff / mean / diff: {moved}")
    ratios = sorted(
        (after[k]["diff_high"] - after[k]["diff_low"]) / (before[k]["diff_high"] - before[k]["diff_low"])
        for k in keys
        if before[k]["diff_high"] is not None and before[k]["diff_high"] > before[k]["diff_low"]
    )
    if ratios:
        q = [ratios[int(p * (len(ratios) - 1))] for p in (0.0, 0.1, 0.5, 0.9, 1.0)]
        print("width of [diff_low, diff_high], after / before: min, p10, median, p90, max = "
              + ", ".join(f"{x:.3f}" for x in q))  # fmt: skip


if __name__ == "__main__":
    main()
