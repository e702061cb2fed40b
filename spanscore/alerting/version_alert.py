"""The version alert's aggregate: the newest version's weighted mean minus the previous version's, with an interval.

"The newest service.version is worse than the previous one on scorer X" then fires by the alerts' own rule (the
whole interval below ``below:``, at least ``min_samples``), with the difference and its interval computed as
``spanscore report compare`` computes them (spanscore.alerting.comparison). The newest version is the one whose
first score in the window is the latest; the previous one is the version first seen before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanscore.alerting.comparison import Observation, Settings, Sums, compare
from spanscore.alerting.statistics import Estimate


def newest_against_previous(rows: Sequence[tuple[Any, ...]], confidence: float) -> Estimate:
    """Rows of (score, sample rate, label, version, run start ns); samples is the smaller version's n."""
    observations: dict[str, list[Observation]] = {}
    first_seen: dict[str, int] = {}
    for score, rate, _label, version, started in rows:
        if score is None or rate <= 0:
            continue
        observations.setdefault(version, []).append(Observation(float(score), float(rate)))
        first_seen[version] = min(first_seen.get(version, started), started)
    ordered = sorted(first_seen, key=lambda v: (first_seen[v], v))
    if len(ordered) < 2:
        return Estimate(None, None, None, 0)
    previous, newest = ordered[-2], ordered[-1]
    in_unit = all(0.0 <= o.value <= 1.0 for v in (previous, newest) for o in observations[v])
    settings = Settings(previous, confidence, bounds=(0.0, 1.0) if in_unit else None)
    groups = {"alert": {v: Sums.of(observations[v]) for v in (previous, newest)}}
    [comparison] = compare(groups, settings)
    entry = next(r for r in comparison.versions if r.summary.version == newest)
    samples = min(len(observations[previous]), len(observations[newest]))
    return Estimate(entry.diff, entry.diff_low, entry.diff_high, samples)
