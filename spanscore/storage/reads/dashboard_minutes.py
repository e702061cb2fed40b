"""The dashboard's time series in minute buckets, for short windows: "last hour" as up to 60 points, not 1-2.

Spanscore's own scores are read from the per-minute roll-up ``scores_1m`` (migration 0004, split by target
in 0011), finalized here the way ``score_trend_hourly`` finalizes ``scores_1h``; outside scores and coverage
are read exactly, as the hourly reads do, truncated to the minute. Each statement is the hourly one of
``dashboard_series`` with the roll-up and the truncation swapped, so a change to how the hourly series
count carries over to minutes; ``_minutes`` refuses to build a statement the swap did not reach.
"""

from __future__ import annotations

from spanscore.storage.reads.dashboard_series import COST_SQL, COVERAGE_SQL, TREND_SQL
from spanscore.storage.schema.unknown_cost import PRICED_TREND_MEASURES

MAX_MINUTE_WINDOW_S = 6 * 3600
"""Minute buckets are read for windows up to this long (360 points per name at most)."""

_KEYS = "Rule, Target, Scorer, ServiceName, AgentName, Model, JudgeModel"
SCORE_TREND_MINUTES = (
    f"(SELECT Bucket AS Hour, {_KEYS},\n{PRICED_TREND_MEASURES}\n"
    "FROM (SELECT * REPLACE (if(Target = '', 'run', Target) AS Target) FROM scores_1m)\n"
    f"GROUP BY Hour, {_KEYS})"
)
"""``score_trend_hourly``'s columns over ``scores_1m``; its ``Hour`` column holds the minute."""


def _minutes(sql: str) -> str:
    swapped = sql.replace("FROM score_trend_hourly", f"FROM {SCORE_TREND_MINUTES}").replace(
        "toStartOfHour(", "toStartOfMinute("
    )
    if "toStartOfHour(" in swapped or "score_trend_hourly" in swapped or swapped == sql:
        raise RuntimeError("a dashboard series statement changed shape: its minute version cannot be derived")
    return swapped


TREND_MINUTES_SQL = _minutes(TREND_SQL)
COST_MINUTES_SQL = _minutes(COST_SQL)
COVERAGE_MINUTES_SQL = _minutes(COVERAGE_SQL)
