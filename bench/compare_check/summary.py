"""From per-version records to the figures issue #41 asks for, each rate with its own 95% interval.

A rate over k trials gets a Clopper-Pearson interval, so that "false positives <= alpha" is read with the
simulation's own noise in view rather than from a point estimate.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from bench.compare_check.agreement import agreement, bias

Rec = dict[str, Any]


def rate(hits: int, trials: int) -> str:
    if not trials:
        return "no trials"
    low, high = proportion_confint(hits, trials, alpha=0.05, method="beta")
    return f"{hits / trials:.4f} ({hits}/{trials}, 95% CI {low:.4f}-{high:.4f})"


def _inside(low: Any, high: Any, value: float) -> bool:
    return low is not None and high is not None and low <= value <= high


def false_positives(records: list[Rec], alpha: float) -> list[str]:
    lines = [f"\n== false 'better'/'worse' on versions equal to the baseline (must be <= {alpha:g}) =="]
    for scenario in ("one_score", "one_passfail"):
        for roles in (("null",), ("tiny",)):
            sel = [r for r in records if r["scenario"] == scenario and r["role"] in roles and r["delta"] == 0]
            hits = sum(r["tool"].get("verdict") in ("better", "worse") for r in sel)
            lines.append(f"{scenario:13} {roles[0]:5} {rate(hits, len(sel))}")
    family: dict[tuple[int, str], bool] = defaultdict(bool)
    for r in records:
        if r["scenario"] == "five_scorers" and r["role"] == "null":
            family[(r["seed"], r["version"])] |= r["tool"].get("verdict") in ("better", "worse")
    lines.append(f"five_scorers  any scorer of a version (family-wise) {rate(sum(family.values()), len(family))}")
    for scorer in sorted({r["scorer"] for r in records if r["scenario"] == "five_scorers"}):
        sel = [r for r in records if r["scenario"] == "five_scorers" and r["role"] == "null" and r["scorer"] == scorer]
        hits = sum(r["tool"].get("verdict") in ("better", "worse") for r in sel)
        lines.append(f"five_scorers  {scorer:9} {rate(hits, len(sel))}")
    return lines


def coverage(records: list[Rec]) -> list[str]:
    lines = ["\n== coverage of the intervals (the truth inside [low, high]) =="]
    for scenario in ("one_score", "one_passfail", "five_scorers"):
        sel = [r for r in records if r["scenario"] == scenario and r["role"] != "tiny" and r["tool"]]
        checks: list[tuple[str, Callable[[Rec], bool]]] = [
            ("ci vs true mean", lambda r: _inside(r["tool"].get("ci_low"), r["tool"].get("ci_high"), r["true_mean"])),
            (
                "ci vs finite mean",
                lambda r: _inside(r["tool"].get("ci_low"), r["tool"].get("ci_high"), r["finite_mean"]),
            ),
        ]
        for name, ok in checks:
            lines.append(f"{scenario:13} {name:22} {rate(sum(map(ok, sel)), len(sel))}")
        diffs = [r for r in sel if r["role"] != "baseline"]
        for name, truth in (("diff vs true delta", "delta"), ("diff vs finite diff", "finite_diff")):
            hits = sum(_inside(r["tool"].get("diff_low"), r["tool"].get("diff_high"), r[truth]) for r in diffs)
            lines.append(f"{scenario:13} {name:22} {rate(hits, len(diffs))}")
    return lines


def power(records: list[Rec]) -> list[str]:
    lines = ["\n== power: share of right-direction verdicts when the versions differ (n ~ 300 vs ~1500) =="]
    for scenario in ("one_score", "one_passfail", "five_scorers"):
        for version in sorted({r["version"] for r in records if r["role"] == "effect"}):
            sel = [r for r in records if r["scenario"] == scenario and r["version"] == version]
            if not sel:
                continue
            want = "better" if sel[0]["delta"] > 0 else "worse"
            wrong = "worse" if want == "better" else "better"
            right = sum(r["tool"].get("verdict") == want for r in sel)
            flipped = sum(r["tool"].get("verdict") == wrong for r in sel)
            lines.append(
                f"{scenario:13} delta {sel[0]['delta']:+.2f} {want}: {rate(right, len(sel))}; {wrong}: {flipped}"
            )
    return lines


def _verdicts(records: Iterable[Rec]) -> str:
    counts: dict[str, int] = defaultdict(int)
    for r in records:
        counts[str(r["tool"].get("verdict"))] += 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def too_few(records: list[Rec]) -> list[str]:
    lines = ["\n== verdicts by role (tiny: about ten scored runs) =="]
    for role in ("null", "effect", "tiny"):
        lines.append(f"{role:7} {_verdicts(r for r in records if r['role'] == role)}")
    return lines


def needed_vs_reference(records: list[Rec], confidence: float) -> list[str]:
    """n_needed against n = (z_{1-a/2} + z_{0.8})^2 (s_v^2 + s_b^2) / diff^2, s^2 the per-run variance of each side.

    C2 says n_needed is how many runs per version would detect the observed difference; at 80% power that
    grows as 1/diff^2, so tiny observed differences must ask for very many runs.
    """
    bases = {(r["scenario"], r["seed"], r["scorer"]): r for r in records if r["role"] == "baseline"}
    rows = []
    for r in records:
        if r["tool"].get("verdict") != "too_few" or r["role"] == "tiny" or "ref_ci" not in r:
            continue
        b = bases[(r["scenario"], r["seed"], r["scorer"])]
        spread = _per_run_var(r, confidence) + _per_run_var(b, confidence)
        rows.append((abs(r["tool"]["diff"]), r["tool"]["n_needed"], spread))
    lines = ["n_needed (too_few, non-tiny) against an 80%-power reference on the same variances:"]
    zsum = float(stats.norm.ppf(0.5 + confidence / 2) + stats.norm.ppf(0.8))
    for low, high in ((0, 0.01), (0.01, 0.03), (0.03, 0.05), (0.05, 0.08), (0.08, 1.0)):
        sel = [x for x in rows if low <= x[0] < high and x[1] is not None]
        if sel:
            tool = sorted(x[1] for x in sel)
            ref = sorted(int(zsum**2 * x[2] / max(x[0], 1e-9) ** 2) for x in sel)
            lines.append(f"  |diff| in [{low}, {high}): {len(sel)}; n_needed median {tool[len(tool) // 2]}, "
                         f"max {tool[-1]}; reference median {ref[len(ref) // 2]}")  # fmt: skip
    return lines


def _per_run_var(r: Rec, confidence: float) -> float:
    """n times the HC0 variance of the mean, read back from the reference interval at the run's confidence."""
    low, high = r["ref_ci"]["wald_hc0_z"]
    return float(((high - low) / 2 / stats.norm.ppf(0.5 + confidence / 2)) ** 2 * r["ref_n"])


def consistency(records: list[Rec]) -> list[str]:
    """Verdicts set against the printed difference interval: with a correction across scorers they may differ."""
    lines = ["\n== verdicts against the printed difference interval =="]
    for scenario in ("one_score", "one_passfail", "five_scorers"):
        sel = [r for r in records if r["scenario"] == scenario and r["tool"].get("diff_low") is not None]
        decided = [r for r in sel if r["tool"].get("verdict") in ("better", "worse")]
        undecided = [r for r in sel if r["tool"].get("verdict") == "no_difference"]
        inside = sum(r["tool"]["diff_low"] <= 0 <= r["tool"]["diff_high"] for r in decided)
        outside = sum(not r["tool"]["diff_low"] <= 0 <= r["tool"]["diff_high"] for r in undecided)
        lines.append(
            f"{scenario:13} better/worse with 0 inside the interval: {inside} of {len(decided)}; "
            f"no_difference with 0 outside it: {outside} of {len(undecided)}"
        )
    return lines


def summarise(records: list[Rec], confidence: float) -> list[str]:
    return [
        *false_positives(records, 1 - confidence),
        *coverage(records),
        *power(records),
        *too_few(records),
        *needed_vs_reference(records, confidence),
        *consistency(records),
        *bias(records),
        *agreement(records),
    ]
