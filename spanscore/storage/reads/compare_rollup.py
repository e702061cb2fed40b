"""The comparison's sums read from the hourly roll-up ``scores_versions_1h`` (migration 0018) instead of the scores.

A roll-up row holds the sums of one (hour, rule, scorer, version name, version value); adding them up over the
window's hours gives the very sums ``compare.compare_sql`` adds up over the scores, in time that grows with the
hours and versions, not with the scores. The window is whole hours: it starts at the top of the hour that holds
``now - since`` (the raw path starts at ``now - since`` itself). Rescored scores count once per write (see
``spanscore.storage.schema.version_rollup``).
"""

from __future__ import annotations

from typing import Any

from spanscore.storage.schema.version_rollup import LATENCY_LEVELS, TABLE, VERSION_COLUMNS
from spanscore.storage.scores import VERSION_PREFIX

_WINDOW = (
    f" FROM {TABLE} WHERE VersionKey = {{version_key:String}}"
    " AND Bucket >= toStartOfHour(now() - toIntervalSecond({since:UInt32}))"
)

ROLLUP_SQL = (
    "SELECT Scorer, VersionValue AS Version, sum(N) AS n, sum(W) AS w, sum(W2) AS w2, sum(WY) AS wy,"
    " sum(W2Y) AS w2y, sum(W2Y2) AS w2y2, min(Low) AS low, max(High) AS high, sum(NotBinary) = 0 AS binary,"
    f" quantilesMerge({LATENCY_LEVELS})(LatencyState) AS latency, latency[1] AS p50, latency[2] AS p95,"
    " avgMerge(InputTokensState) AS input_tokens, avgMerge(OutputTokensState) AS output_tokens,"
    " avgMerge(CostState) AS cost, if(sum(N4) = sum(N), sum(W4), NULL) AS w4"
    f"{_WINDOW} AND (empty({{scorers:Array(String)}}) OR has({{scorers:Array(String)}}, Scorer))"
    " GROUP BY Scorer, Version ORDER BY Scorer, Version LIMIT {groups:UInt32}"
)
"""Same columns as ``compare.compare_sql`` (with ``latency`` between, dropped by the reader)."""


def rollup_key(by: str, column: str | None) -> dict[str, Any]:
    """The roll-up's VersionKey for ``by``: its score column's name, or the kept attribute's key."""
    if column is not None and column in VERSION_COLUMNS:
        return {"version_key": column}
    return {"version_key": VERSION_PREFIX + by}
