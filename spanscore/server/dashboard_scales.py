"""The scale each scored name is drawn on, so a 1-5 rating never shares the 0-1 axis of the scorers.

A scorer's ``scale`` option (``{name: toxicity, scale: 10}``) gives its range, 0 to the scale. Any other
name (a feedback name, an outside evaluation, a scorer without the option) is placed by its values: the
first usual scale that holds its lowest and highest value (0-1, 1-5, 0-5, 1-10, 0-10, 0-100), else the
whole numbers around them. A name without values (labels only) is on 0-1, as its pass share is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

USUAL_SCALES = ((0, 1), (1, 5), (0, 5), (1, 10), (0, 10), (0, 100))
"""Ranges tried in this order: a name whose values fit one is drawn on it."""


def scale_of_values(low: float, high: float) -> dict[str, Any]:
    for start, end in USUAL_SCALES:
        if start <= low and high <= end:
            return {"low": start, "high": end, "from": "values"}
    start, end = math.floor(low), math.ceil(high)
    return {"low": start, "high": end if end > start else start + 1, "from": "values"}


def configured_scales(rules: Iterable[Mapping[str, Any]] | None) -> dict[str, float]:
    """Scorer -> the widest ``scale`` option the loaded rules give it."""
    scales: dict[str, float] = {}
    for rule in rules or ():
        for scorer, scale in (rule.get("scales") or {}).items():
            scales[scorer] = max(scale, scales.get(scorer, scale))
    return scales


def add_scales(
    rows: list[dict[str, Any]], ranges: Iterable[Mapping[str, Any]], configured: Mapping[str, float]
) -> list[dict[str, Any]]:
    """Each row (``scorer``, ``source``) with its ``scale``: ``{"low", "high", "from"}``."""
    seen = {(r["scorer"], r["source"]): r for r in ranges if r["low"] is not None and r["high"] is not None}
    for row in rows:
        key = (row["scorer"], row["source"])
        if not row["source"] and row["scorer"] in configured:
            high = configured[row["scorer"]]
            row["scale"] = {"low": 0, "high": int(high) if float(high).is_integer() else high, "from": "config"}
        elif key in seen:
            row["scale"] = scale_of_values(float(seen[key]["low"]), float(seen[key]["high"]))
        else:
            row["scale"] = {"low": 0, "high": 1, "from": "default"}
    return rows
