"""The score roll-ups' DDL, written once for both grains (per minute and per hour).

Migration ``0004_rollups.sql`` places these statements with ``{rollup_tables}``,
``{rollup_backfills}`` and ``{rollup_views}``: for each grain an AggregatingMergeTree table,
its one-time copy of the history, and the materialized view that keeps it current. Each
measure is declared once below (column, state type, the aggregate that fills it), so a
table and the selects that fill it cannot drift apart.

Migration ``0011_rollup_targets.sql`` adds the rule's target to both tables and their sorting
keys (``{rollup_target_columns}``) and replaces each materialized view with one that writes it
(``{rollup_target_views}``).

A migration is applied once and never again, so what this renders must not change: a change
to the roll-ups is a new migration with its own statements (``test_migrations_are_frozen``
fails when the text of an applied migration moves).
"""

from __future__ import annotations

GRAINS = (("1m", "toStartOfMinute"), ("1h", "toStartOfHour"))
DIMENSIONS = ("Rule", "Scorer", "ServiceName", "AgentName", "Model", "JudgeModel")
SORTING_KEY = ("Scorer", "Rule", "ServiceName", "AgentName", "Model", "JudgeModel", "Bucket")
TARGET_DIMENSIONS = (*DIMENSIONS, "Target")
"""Since migration 0011 the roll-ups are split by the rule's target as well (appended to the sorting key)."""
_RATE = "if(SampleRate > 0, SampleRate, 1.)"  # a SampleRate of 0 (never sampled) counts as 1
_LEVELS = "0.5, 0.9, 0.99"  # the quantiles kept
_SUM = "AggregateFunction(sum, Nullable(Float64))"
_COUNT_IF = "AggregateFunction(countIf, UInt8)"
_QUANTILES = f"AggregateFunction(quantiles({_LEVELS}), Nullable(Float64))"

# (column, its type in the roll-up table, the aggregate over `scores` rows that fills it)
MEASURES = (
    ("HigherIsBetter", "SimpleAggregateFunction(max, UInt8)", "max(toUInt8(HigherIsBetter))"),
    ("ScoresState", "AggregateFunction(count)", "countState()"),
    ("ScoredState", "AggregateFunction(count, Nullable(Float64))", "countState(Score)"),
    ("ScoreSumState", _SUM, "sumState(Score)"),
    ("WeightedScoreSumState", _SUM, f"sumState(Score / {_RATE})"),
    ("WeightSumState", "AggregateFunction(sumIf, Float64, UInt8)", f"sumIfState(1. / {_RATE}, Score IS NOT NULL)"),
    ("QuantilesState", _QUANTILES, f"quantilesState({_LEVELS})(Score)"),
    ("PassState", _COUNT_IF, "countIfState(Label = 'pass')"),
    ("FailState", _COUNT_IF, "countIfState(Label = 'fail')"),
    ("StatusOkState", _COUNT_IF, "countIfState(Status = 'ok')"),
    ("NotApplicableState", _COUNT_IF, "countIfState(Status = 'not_applicable')"),
    ("MissingInputState", _COUNT_IF, "countIfState(Status = 'missing_input')"),
    ("ErrorState", _COUNT_IF, "countIfState(Status = 'error')"),
    ("CostUsdState", "AggregateFunction(sum, Float64)", "sumState(CostUsd)"),
    ("InputTokensState", "AggregateFunction(sum, UInt64)", "sumState(InputTokens)"),
    ("OutputTokensState", "AggregateFunction(sum, UInt64)", "sumState(OutputTokens)"),
)
_INDENT = "    "


def _table(grain: str) -> str:
    columns = [
        "Bucket DateTime CODEC(Delta, ZSTD(1))",
        *(f"{name} LowCardinality(String)" for name in DIMENSIONS),
        *(f"{name} {state_type}" for name, state_type, _ in MEASURES),
    ]
    body = ",\n".join(_INDENT + column for column in columns)
    return (
        f"CREATE TABLE IF NOT EXISTS {{database}}.scores_{grain} (\n{body}\n) ENGINE = AggregatingMergeTree\n"
        f"PARTITION BY toYYYYMM(Bucket)\nORDER BY ({', '.join(SORTING_KEY)})"
    )


def _select(truncate: str, dimensions: tuple[str, ...] = DIMENSIONS) -> str:
    """The SELECT list shared by the backfill and the materialized view of one grain."""
    expressions = [
        f"toDateTime({truncate}(RunTimestamp)) AS Bucket",
        ", ".join(dimensions),
        *(f"{expression} AS {name}" for name, _, expression in MEASURES),
    ]
    return "SELECT\n" + ",\n".join(_INDENT + expression for expression in expressions)


def _group_by(dimensions: tuple[str, ...] = DIMENSIONS) -> str:
    return f"GROUP BY {', '.join(('Bucket', *dimensions))}"


def _backfill(grain: str, truncate: str) -> str:
    """Copy the history once, from ``scores FINAL``, and only into an empty table (a rerun copies nothing)."""
    return (
        f"INSERT INTO {{database}}.scores_{grain}\n{_select(truncate)}\nFROM {{database}}.scores FINAL\n"
        f"WHERE (SELECT count() FROM {{database}}.scores_{grain}) = 0\n{_group_by()}"
    )


def _view(grain: str, truncate: str) -> str:
    return (
        f"CREATE MATERIALIZED VIEW IF NOT EXISTS {{database}}.scores_{grain}_mv\nTO {{database}}.scores_{grain}\n"
        f"AS {_select(truncate)}\nFROM {{database}}.scores\n{_group_by()}"
    )


def _add_target(grain: str) -> str:
    """Target joins the roll-up and its sorting key (new key columns may only be appended, and take no default).

    Rows rolled up before carry '' there: read them as 'run' (score_trend_hourly does).
    """
    key = ", ".join((*SORTING_KEY, "Target"))
    return (
        f"ALTER TABLE {{database}}.scores_{grain} ADD COLUMN IF NOT EXISTS Target LowCardinality(String) "
        f"AFTER JudgeModel, MODIFY ORDER BY ({key})"
    )


def _target_view(grain: str, truncate: str) -> str:
    """The grain's materialized view again, now writing Target; the old one is dropped first."""
    drop = f"DROP VIEW IF EXISTS {{database}}.scores_{grain}_mv"
    create = (
        f"CREATE MATERIALIZED VIEW IF NOT EXISTS {{database}}.scores_{grain}_mv\nTO {{database}}.scores_{grain}\n"
        f"AS {_select(truncate, TARGET_DIMENSIONS)}\nFROM {{database}}.scores\n{_group_by(TARGET_DIMENSIONS)}"
    )
    return _statements([drop, create])


def _statements(parts: list[str]) -> str:
    """Statements as a migration file separates them: ';' at the end of a line, a blank line between."""
    return ";\n\n".join(parts)


FRAGMENTS = {
    "rollup_tables": _statements([_table(grain) for grain, _ in GRAINS]),
    "rollup_backfills": _statements([_backfill(grain, truncate) for grain, truncate in GRAINS]),
    "rollup_views": _statements([_view(grain, truncate) for grain, truncate in GRAINS]),
    "rollup_target_columns": _statements([_add_target(grain) for grain, _ in GRAINS]),
    "rollup_target_views": _statements([_target_view(grain, truncate) for grain, truncate in GRAINS]),
}
