"""Migration 0017's statements: judge cost litellm could not price is NULL (unknown), never a 0 that sums.

``scores.CostUsd`` becomes ``Nullable(Float64)``: NULL when any judge call of the score had no price (the
row's ``judge.cost = unknown`` attribute said so before, while CostUsd summed only the priced calls). The
roll-ups gain ``UnpricedState``, the number of such scores, and keep summing the priced ones in
``CostUsdState``; ``score_trend_hourly`` and ``judge_cost_daily`` then give ``CostUsd`` NULL where any score of
the group is unpriced, next to ``PricedCostUsd`` (what the priced ones cost) and ``UnpricedScores``.

Order matters: the materialized views are dropped before the column changes type (their ``sumState(CostUsd)``
would no longer fit the roll-up column), the history of unpriced scores is counted into the roll-ups once
(only while no roll-up row counts any, so a rerun adds nothing), and the views are created again last.
Scores inserted between the drop and the create are missing from the roll-ups (they stay in ``scores``).
"""

from __future__ import annotations

from spanscore.storage.schema.dashboard_views import TREND_MEASURES
from spanscore.storage.schema.rollups import GRAINS, MEASURES, TARGET_DIMENSIONS

_INDENT = "    "
_UNPRICED = ("UnpricedState", "AggregateFunction(countIf, UInt8)", "countIfState(CostUsd IS NULL)")
_MEASURES = tuple(
    (name, kind, "sumState(ifNull(CostUsd, 0.))" if name == "CostUsdState" else expression)
    for name, kind, expression in (*MEASURES, _UNPRICED)
)
_COST = (
    "    if(countIfMerge(UnpricedState) > 0, NULL, sumMerge(CostUsdState)) AS CostUsd,\n"
    "    sumMerge(CostUsdState) AS PricedCostUsd,\n"
    "    countIfMerge(UnpricedState) AS UnpricedScores,"
)
PRICED_TREND_MEASURES = TREND_MEASURES.replace("    sumMerge(CostUsdState) AS CostUsd,", _COST)
"""``score_trend_hourly``'s measures since this migration: unknown cost is NULL, with the priced part beside it."""
assert PRICED_TREND_MEASURES != TREND_MEASURES
_HOURLY = "(SELECT * REPLACE (if(Target = '', 'run', Target) AS Target) FROM {database}.scores_1h)"


def _drop_view(grain: str) -> str:
    return f"DROP VIEW IF EXISTS {{database}}.scores_{grain}_mv"


def _add_unpriced(grain: str) -> str:
    return f"ALTER TABLE {{database}}.scores_{grain} ADD COLUMN IF NOT EXISTS {_UNPRICED[0]} {_UNPRICED[1]}"


def _select(truncate: str) -> str:
    expressions = [
        f"toDateTime({truncate}(RunTimestamp)) AS Bucket",
        ", ".join(TARGET_DIMENSIONS),
        *(f"{expression} AS {name}" for name, _, expression in _MEASURES),
    ]
    return "SELECT\n" + ",\n".join(_INDENT + expression for expression in expressions)


def _history(grain: str, truncate: str) -> str:
    """Unpriced scores already rolled up were summed as 0: count them once, in rows holding only that count."""
    keys = ", ".join(TARGET_DIMENSIONS)
    return (
        f"INSERT INTO {{database}}.scores_{grain} (Bucket, {keys}, UnpricedState)\n"
        f"SELECT toDateTime({truncate}(RunTimestamp)) AS Bucket, {keys}, countIfState(toUInt8(1))\n"
        f"FROM {{database}}.scores FINAL\nWHERE Attributes['judge.cost'] = 'unknown'\n"
        f"  AND (SELECT countIfMerge(UnpricedState) FROM {{database}}.scores_{grain}) = 0\n"
        f"GROUP BY Bucket, {keys}"
    )


def _view(grain: str, truncate: str) -> str:
    return (
        f"CREATE MATERIALIZED VIEW IF NOT EXISTS {{database}}.scores_{grain}_mv\nTO {{database}}.scores_{grain}\n"
        f"AS {_select(truncate)}\nFROM {{database}}.scores\nGROUP BY Bucket, {', '.join(TARGET_DIMENSIONS)}"
    )


def _trend_view() -> str:
    keys = "Rule, Target, Scorer, ServiceName, AgentName, Model, JudgeModel"
    measures = PRICED_TREND_MEASURES
    return (
        f"CREATE OR REPLACE VIEW {{database}}.score_trend_hourly AS\nSELECT\n    Bucket AS Hour,\n    {keys},\n"
        f"{measures}\nFROM {_HOURLY}\nGROUP BY Hour, {keys}"
    )


def _cost_view() -> str:
    keys = "Rule, Target, Scorer, JudgeModel"
    return (
        f"CREATE OR REPLACE VIEW {{database}}.judge_cost_daily AS\nSELECT\n    toDate(Bucket) AS Day,\n    {keys},\n"
        f"    countMerge(ScoresState) AS Scores,\n{_COST}\n"
        "    sumMerge(InputTokensState) AS InputTokens,\n    sumMerge(OutputTokensState) AS OutputTokens,\n"
        f"    CostUsd / nullIf(Scores, 0) AS CostUsdPerScore\nFROM {_HOURLY}\nGROUP BY Day, {keys}"
    )


def _statements(parts: list[str]) -> str:
    return ";\n\n".join(parts)


FRAGMENTS = {
    "rollup_unknown_cost_drop_views": _statements([_drop_view(grain) for grain, _ in GRAINS]),
    "rollup_unknown_cost_columns": _statements([_add_unpriced(grain) for grain, _ in GRAINS]),
    "rollup_unknown_cost_history": _statements([_history(grain, truncate) for grain, truncate in GRAINS]),
    "rollup_unknown_cost_views": _statements([_view(grain, truncate) for grain, truncate in GRAINS]),
    "dashboard_unknown_cost_views": _statements([_trend_view(), _cost_view()]),
}
