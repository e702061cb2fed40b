"""Rates from the records of run.py: family-wise false positives, too_few, power, and what contradicts C2.

    .venv/bin/python -m bench.smalln_check.summary /tmp/dev_before.jsonl [--markdown]

A family is one (call, version): it is a false positive when any of the version's k scorers says "better" or
"worse" on a version equal to the baseline (contract C2 bounds that by 1 - confidence). Each rate comes with a
Clopper-Pearson 95% interval over its trials and, because the versions of one call share the baseline's
sample, a cluster (by call) Wald interval, which is the honest one; both are printed.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from statsmodels.stats.proportion import proportion_confint

Rec = dict[str, Any]


def cp(hits: int, trials: int) -> tuple[float, float]:
    low, high = proportion_confint(hits, trials, alpha=0.05, method="beta")
    return float(low), float(high)


def cluster_ci(by_call: dict[Any, tuple[int, int]]) -> tuple[float, float]:
    """Ratio-estimator interval with calls as clusters (the versions of a call share one baseline sample)."""
    ys, ms = zip(*by_call.values(), strict=True)
    total_y, total_m, c = sum(ys), sum(ms), len(ys)
    r = total_y / total_m
    if c < 2:
        return (float("nan"), float("nan"))
    var = c / (c - 1) * sum((y - r * m) ** 2 for y, m in zip(ys, ms, strict=True)) / total_m**2
    return (max(0.0, r - 1.96 * math.sqrt(var)), min(1.0, r + 1.96 * math.sqrt(var)))


def fmt_rate(by_call: dict[Any, tuple[int, int]]) -> str:
    hits, trials = sum(y for y, _ in by_call.values()), sum(m for _, m in by_call.values())
    if not trials:
        return "no trials"
    lo, hi = cp(hits, trials)
    clo, chi = cluster_ci(by_call)
    return f"{hits / trials:.3f} ({hits}/{trials}; CP {lo:.3f}-{hi:.3f}; cluster {clo:.3f}-{chi:.3f})"


def families(recs: list[Rec]) -> dict[tuple[str, int, str], list[Rec]]:
    fam: dict[tuple[str, int, str], list[Rec]] = defaultdict(list)
    for r in recs:
        if "verdict" in r:
            fam[(r["scenario"], r["seed"], r["version"])].append(r)
    return fam


def null_rates(recs: list[Rec], scens: dict[str, Rec], group: Any) -> dict[Any, dict[Any, tuple[int, int]]]:
    """group(scenario) -> key; returns key -> call -> (false families, families)."""
    out: dict[Any, dict[Any, tuple[int, int]]] = defaultdict(dict)
    for (sid, seed, _), rs in families(recs).items():
        if scens[sid]["effect"] != 0.0:
            continue
        key, call = group(scens[sid]), (sid, seed)
        false = any(r["verdict"] in ("better", "worse") for r in rs)
        y, m = out[key].get(call, (0, 0))
        out[key][call] = (y + false, m + 1)
    return out


def share(rs: list[Rec], verdicts: tuple[str, ...]) -> str:
    return f"{sum(r['verdict'] in verdicts for r in rs) / len(rs):.3f}" if rs else "-"


def report(recs: list[Rec], scens: dict[str, Rec]) -> list[str]:
    lines = ["## False positives on equal versions, per scenario (family = a version's k scorers)", "",
             "| scenario | alpha | family-wise false better/worse | per comparison | too_few | no_difference |",
             "|---|---:|---|---:|---:|---:|"]  # fmt: skip
    per = null_rates(recs, scens, lambda s: s["id"])
    for sid in sorted(per):
        rs = [r for r in recs if r.get("scenario") == sid and "verdict" in r]
        alpha = 1 - scens[sid]["confidence"]
        hits = sum(y for y, _ in per[sid].values())
        trials = sum(m for _, m in per[sid].values())
        flag = " **>**" if cp(hits, trials)[0] > alpha else (" (>)" if hits / trials > alpha else "")
        lines.append(f"| {sid} | {alpha:.2f} | {fmt_rate(per[sid])}{flag} | {share(rs, ('better', 'worse'))} "
                     f"| {share(rs, ('too_few',))} | {share(rs, ('no_difference',))} |")  # fmt: skip
    for title, group in (("n and confidence", lambda s: (s["n"], s["confidence"])),
                         ("k scorers and confidence", lambda s: (s["k"], s["confidence"])),
                         ("sampling and confidence", lambda s: (s["sampling"], s["confidence"])),
                         ("confidence", lambda s: s["confidence"])):  # fmt: skip
        lines += ["", f"## Family-wise false positives pooled by {title}", "", "| group | rate |", "|---|---|"]
        for key, calls in sorted(null_rates(recs, scens, group).items()):
            lines.append(f"| {key} | {fmt_rate(calls)} |")
    lines += power(recs, scens) + contradictions(recs)
    return lines


def power(recs: list[Rec], scens: dict[str, Rec]) -> list[str]:
    lines = ["", "## Power (per comparison): right direction / wrong direction / too_few / no_difference", ""]
    lines += ["| scenario | delta | right | wrong | too_few | no_difference |", "|---|---:|---|---:|---:|---:|"]
    cells: dict[tuple[str, float], list[Rec]] = defaultdict(list)
    for r in recs:
        if "verdict" in r and scens[r["scenario"]]["effect"] == "power":
            cells[(r["scenario"], r["delta"])].append(r)
    for (sid, d), rs in sorted(cells.items()):
        right = "better" if d > 0 else "worse"
        wrong = "worse" if d > 0 else "better"
        hits = sum(r["verdict"] == right for r in rs)
        lo, hi = cp(hits, len(rs))
        rest = f"| {share(rs, (wrong,))} | {share(rs, ('too_few',))} | {share(rs, ('no_difference',))} |"
        lines.append(f"| {sid} | {d:+.2f} | {hits / len(rs):.3f} ({hits}/{len(rs)}, {lo:.2f}-{hi:.2f}) {rest}")
    return lines


def contradictions(recs: list[Rec]) -> list[str]:
    rs = [r for r in recs if "verdict" in r]
    decided = [r for r in rs if r["verdict"] in ("better", "worse") and r["diff_low"] is not None]
    zero_inside = [r for r in decided if r["diff_low"] <= 0 <= r["diff_high"]]
    nd_zero_outside = [r for r in rs if r["verdict"] == "no_difference" and r["diff_low"] is not None
                       and not r["diff_low"] <= 0 <= r["diff_high"]]  # fmt: skip
    tf = [r for r in rs if r["verdict"] == "too_few"]
    tf_null_needed = [r for r in tf if r["n_needed"] is None]
    tf_needed_le_n = [r for r in tf if r["n_needed"] is not None and r["n"] is not None and r["n_needed"] <= r["n"]]
    problems = [r for r in recs if "problem" in r]
    lines = ["", "## Consistency with C2", "",
             f"- comparisons: {len(rs)}; problems (failed calls, missing entries, baseline with a verdict): "
             f"{len(problems)}",
             f"- better/worse with 0 inside the printed [diff_low, diff_high]: {len(zero_inside)} of {len(decided)}",
             f"- no_difference with 0 outside the printed interval: {len(nd_zero_outside)}",
             f"- too_few with n_needed null: {len(tf_null_needed)} of {len(tf)}; "
             f"too_few with n_needed <= the n it already has: {len(tf_needed_le_n)}"]  # fmt: skip
    lines += [f"  - {p['scenario']} seed {p['seed']}: {p['problem'][:300]}" for p in problems[:8]]
    return lines


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("records", type=Path)
    p.add_argument("--scenarios", type=Path, nargs="+",
                   default=[Path(__file__).parent / "dev.json", Path(__file__).parent / "held.json"])  # fmt: skip
    a = p.parse_args()
    scens = {s["id"]: s for f in a.scenarios for s in json.loads(f.read_text())}
    recs = [json.loads(line) for line in a.records.read_text().splitlines()]
    print("\n".join(report(recs, scens)))


if __name__ == "__main__":
    main()
