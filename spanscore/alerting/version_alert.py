"""The version alert's aggregate: the newest version's weighted mean minus the previous version's, with an interval.

"The newest service.version is worse than the previous one on scorer X" then fires by the alerts' own rule (the
whole interval below ``below:``, at least ``min_samples``), with the difference and its interval computed as
``spanscore report compare`` computes them (spanscore.alerting.comparison). The newest version is the one whose
first score in the window is the latest; the previous one is the version first seen before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanscore.alerting.comparison import Settings, Sums, compare
from spanscore.alerting.statistics import Estimate


def newest_against_previous(rows: Sequence[tuple[Any, ...]], confidence: float) -> Estimate:
    """The newest version's mean minus the previous one's, with its interval; samples is the smaller version's n.

    ``rows``: one per version, as spanscore.storage.reads.version_window gives them (version, first run time, n,
    the weighted sums, the count of scores not 0 or 1, the lowest and highest score, sum w^4 and its count).
    """
    first_seen = {str(r[0]): int(r[1]) for r in rows if int(r[2]) > 0}
    ordered = sorted(first_seen, key=lambda v: (first_seen[v], v))
    if len(ordered) < 2:
        return Estimate(None, None, None, 0)
    previous, newest = ordered[-2], ordered[-1]
    sums = {
        str(r[0]): Sums(
            int(r[2]),
            float(r[3]),
            float(r[4]),
            float(r[5]),
            float(r[6]),
            float(r[7]),
            int(r[8]) == 0,
            float(r[11]) if int(r[12]) == int(r[2]) else None,  # sum w^4 where it covers every score
        )
        for r in rows
        if str(r[0]) in (previous, newest)
    }
    in_unit = all(0.0 <= float(r[9]) and float(r[10]) <= 1.0 for r in rows if str(r[0]) in sums)
    settings = Settings(previous, confidence, bounds=(0.0, 1.0) if in_unit else None)
    [comparison] = compare({"alert": sums}, settings)
    entry = next(r for r in comparison.versions if r.summary.version == newest)
    return Estimate(entry.diff, entry.diff_low, entry.diff_high, min(sums[previous].n, sums[newest].n))
