"""How far the command's numbers are from the reference computed on the same rows, and what weighting buys.

For every interval variant of reference.py the largest absolute gap over all records is reported, with the
record where it happened, so that a reader sees at once which method the command follows and where it parts.
"""

from __future__ import annotations

from typing import Any

Rec = dict[str, Any]


def _where(r: Rec) -> str:
    return f"{r['scenario']}/seed {r['seed']}/{r['scorer']}/{r['version']}"


def _largest(pairs: list[tuple[float, Rec]]) -> str:
    if not pairs:
        return "no comparable records"
    gap, rec = max(pairs, key=lambda p: p[0])
    return f"{gap:.3g} at {_where(rec)}"


def _gaps(records: list[Rec], tool_key: str, ref: Any) -> list[tuple[float, Rec]]:
    out = []
    for r in records:
        got, want = r["tool"].get(tool_key), ref(r)
        if got is not None and want is not None:
            out.append((abs(float(got) - float(want)), r))
    return out


def _interval_gaps(records: list[Rec], keys: tuple[str, str], field: str, variant: str) -> list[tuple[float, Rec]]:
    out = []
    for r in records:
        low, high = r["tool"].get(keys[0]), r["tool"].get(keys[1])
        ref = r.get(field, {}).get(variant)
        if low is not None and high is not None and ref is not None:
            out.append((max(abs(low - ref[0]), abs(high - ref[1])), r))
    return out


def _interval_lines(records: list[Rec], keys: tuple[str, str], field: str, title: str) -> list[str]:
    """Per score type and reference variant: the largest gap over all records, then over the non-tiny ones."""
    lines = []
    for binary in (False, True):
        sel = [r for r in records if r["binary"] == binary]
        label = "pass/fail" if binary else "[0,1] score"
        for variant in sorted({k for r in sel for k in r[field]}):
            every = _largest(_interval_gaps(sel, keys, field, variant))
            usual = _largest(_interval_gaps([r for r in sel if r["role"] != "tiny"], keys, field, variant))
            lines.append(f"{label:11} {title} vs {variant:27} {every}; without tiny: {usual}")
    return lines


def agreement(records: list[Rec]) -> list[str]:
    comparable = [r for r in records if "ref_mean" in r and r["tool"]]
    lines = ["\n== largest differences from the reference on the same weighted data =="]
    n_off = [r for r in comparable if r["tool"].get("n") != r["ref_n"]]
    lines.append(f"n differs from the row count in {len(n_off)} of {len(comparable)} records")
    lines.append(f"n_eff vs Kish (sum w)^2/sum w^2: {_largest(_gaps(comparable, 'n_eff', lambda r: r['ref_n_eff']))}")
    lines.append(f"mean vs Hajek: {_largest(_gaps(comparable, 'mean', lambda r: r['ref_mean']))}")
    self_gap = max((abs(r["ref_mean"] - r["ref_wls_mean"]) for r in comparable), default=0.0)
    lines.append(f"(reference self-check: hand Hajek vs statsmodels WLS intercept {self_gap:.3g})")
    lines += _interval_lines(comparable, ("ci_low", "ci_high"), "ref_ci", "ci")
    diffs = [r for r in comparable if "ref_diff" in r]
    lines.append(f"diff vs difference of Hajek means: {_largest(_gaps(diffs, 'diff', lambda r: r['ref_diff']))}")
    lines += _interval_lines(diffs, ("diff_low", "diff_high"), "ref_diff_ci", "diff ci")
    return lines


def bias(records: list[Rec]) -> list[str]:
    """Average error against the true mean: the command's weighted mean versus the plain mean of the rows.

    Split by the direction in which pi tracks the value, since the plain mean errs up in one and down in the other.
    """
    lines = ["\n== average error of the mean against the true mean (non-tiny versions) =="]
    for binary in (False, True):
        for rising in (True, False):
            sel = [r for r in records if r["binary"] == binary and r["rising"] == rising and r["role"] != "tiny"]
            sel = [r for r in sel if r["tool"].get("mean") is not None and r.get("ref_unweighted") is not None]
            if not sel:
                continue
            tool = sum(r["tool"]["mean"] - r["true_mean"] for r in sel) / len(sel)
            plain = sum(r["ref_unweighted"] - r["true_mean"] for r in sel) / len(sel)
            label = f"{'pass/fail' if binary else '[0,1] score'}, pi {'rises' if rising else 'falls'} with value"
            lines.append(f"{label:36} command {tool:+.4f}, unweighted mean of the rows {plain:+.4f} (n={len(sel)})")
    return lines
