"""Migration 0018's statements: the hourly roll-up behind ``report compare`` (#41), ``scores_versions_1h``.

A comparison needs, per scorer and version, only sums (docs/compare.md, Estimators): the count, the sum of the
weights w = 1/p, of w², w·y, w²·y, w²·y², the smallest and largest score, whether any score is not 0 or 1,
and the run figures shown beside them (latency quantiles, tokens per run). All of them merge across hours, so
one row per (hour, rule, scorer, version name, version value) answers any window of whole hours.

The version names rolled up are every attribute kept with the scores (``Attributes['version.<name>']``, the
``collector.runs.version_attributes`` chosen in config) and the score columns a comparison may group by
(``VERSION_COLUMNS``): each ok score becomes one roll-up row per name it has a non-empty value for. Any other
attribute is read from the raw scores and spans (``spanscore.storage.reads.compare``).

The same caveat as ``scores_1m``/``scores_1h`` (migration 0004): the view sees inserts, not merges, so a
score written again under its ScoreId (a rescore, a replay) is counted once per write here, while
``scores FINAL`` keeps only the newest. The history present when the migration runs is copied in once from
``scores FINAL`` (only into an empty table, so a rerun copies nothing), before the view exists.
"""

from __future__ import annotations

from spanscore.storage.scores import RUN_COST, RUN_TOKENS, VERSION_PREFIX

TABLE = "scores_versions_1h"
VERSION_COLUMNS = ("ServiceName", "AgentName", "Model", "Rule", "RuleVersion", "ScorerVersion")
"""Score columns rolled up as versions; their name is the roll-up's VersionKey (kept attributes keep theirs)."""
LATENCY_LEVELS = "0.5, 0.95"
_INDENT = "    "
_W = "(1. / SampleRate)"
_W2 = "(1. / (SampleRate * SampleRate))"
_Y = "assumeNotNull(Score)"

# (column, its type in the roll-up, the aggregate over `scores` rows that fills it)
MEASURES = (
    ("N", "SimpleAggregateFunction(sum, UInt64)", "toUInt64(count())"),
    ("W", "SimpleAggregateFunction(sum, Float64)", f"sum({_W})"),
    ("W2", "SimpleAggregateFunction(sum, Float64)", f"sum({_W2})"),
    ("WY", "SimpleAggregateFunction(sum, Float64)", f"sum({_Y} * {_W})"),
    ("W2Y", "SimpleAggregateFunction(sum, Float64)", f"sum({_Y} * {_W2})"),
    ("W2Y2", "SimpleAggregateFunction(sum, Float64)", f"sum({_Y} * {_Y} * {_W2})"),
    ("Low", "SimpleAggregateFunction(min, Float64)", f"min({_Y})"),
    ("High", "SimpleAggregateFunction(max, Float64)", f"max({_Y})"),
    ("NotBinary", "SimpleAggregateFunction(sum, UInt64)", f"toUInt64(countIf({_Y} NOT IN (0, 1)))"),
    (
        "LatencyState",
        f"AggregateFunction(quantiles({LATENCY_LEVELS}), Float64)",
        f"quantilesState({LATENCY_LEVELS})(RunDurationMs)",
    ),
    (
        "InputTokensState",
        "AggregateFunction(avg, Nullable(Float64))",
        f"avgState(toFloat64OrNull(Attributes['{RUN_TOKENS[0]}']))",
    ),
    (
        "OutputTokensState",
        "AggregateFunction(avg, Nullable(Float64))",
        f"avgState(toFloat64OrNull(Attributes['{RUN_TOKENS[1]}']))",
    ),
    # migration 0020: the run's cost, unknown (NULL, left out of the average) where the score does not carry it;
    # sum(w^4) for the variance's degrees of freedom, with N4 the scores it covers (hours before 0020 have none)
    ("CostState", "AggregateFunction(avg, Nullable(Float64))", f"avgState(toFloat64OrNull(Attributes['{RUN_COST}']))"),
    ("W4", "SimpleAggregateFunction(sum, Float64)", f"sum({_W2} * {_W2})"),
    ("N4", "SimpleAggregateFunction(sum, UInt64)", "toUInt64(count())"),
)
ADDED_IN_0020 = ("CostState", "W4", "N4")
_PAIRS = (
    "arrayConcat(arrayFilter(kv -> startsWith(kv.1, '{prefix}') AND kv.2 != '',"
    " arrayZip(arrayMap(k -> toString(k), mapKeys(Attributes)), mapValues(Attributes))),"
    " arrayFilter(kv -> kv.2 != '', [{columns}]))"
)
_OK = "Status = 'ok' AND Source = 'spanscore' AND Score IS NOT NULL AND SampleRate > 0"


def _table() -> str:
    columns = [
        "Bucket DateTime CODEC(Delta, ZSTD(1))",
        "VersionKey LowCardinality(String)",
        "Scorer LowCardinality(String)",
        "Rule LowCardinality(String)",
        "VersionValue String CODEC(ZSTD(1))",
        *(f"{name} {kind}" for name, kind, _ in MEASURES),
    ]
    body = ",\n".join(_INDENT + column for column in columns)
    return (
        f"CREATE TABLE IF NOT EXISTS {{database}}.{TABLE} (\n{body}\n) ENGINE = AggregatingMergeTree\n"
        "PARTITION BY toYYYYMM(Bucket)\nORDER BY (VersionKey, Bucket, Scorer, Rule, VersionValue)"
    )


def _select(source: str) -> str:
    """The SELECT shared by the backfill and the view: one row per score and version name it carries."""
    columns = ", ".join(f"('{c}', toString({c}))" for c in VERSION_COLUMNS)
    pairs = _PAIRS.format(prefix=VERSION_PREFIX, columns=columns)
    expressions = [
        "toDateTime(toStartOfHour(RunTimestamp)) AS Bucket",
        "kv.1 AS VersionKey",
        "Scorer",
        "Rule",
        "kv.2 AS VersionValue",
        *(f"{expression} AS {name}" for name, _, expression in MEASURES),
    ]
    return (
        "SELECT\n" + ",\n".join(_INDENT + e for e in expressions) + f"\nFROM {source}\nARRAY JOIN {pairs} AS kv\n"
        f"WHERE {_OK}"
    )


def _backfill() -> str:
    return (
        f"INSERT INTO {{database}}.{TABLE}\n{_select('{database}.scores FINAL')}\n"
        f"  AND (SELECT count() FROM {{database}}.{TABLE}) = 0\n"
        "GROUP BY Bucket, VersionKey, Scorer, Rule, VersionValue"
    )


def _view() -> str:
    return (
        f"CREATE MATERIALIZED VIEW IF NOT EXISTS {{database}}.{TABLE}_mv\nTO {{database}}.{TABLE}\n"
        f"AS {_select('{database}.scores')}\nGROUP BY Bucket, VersionKey, Scorer, Rule, VersionValue"
    )


def _columns_0020() -> str:
    kinds = {name: kind for name, kind, _ in MEASURES}
    added = ", ".join(f"ADD COLUMN IF NOT EXISTS {name} {kinds[name]}" for name in ADDED_IN_0020)
    return f"ALTER TABLE {{database}}.{TABLE} {added}"


FRAGMENTS = {
    "rollup_versions_added_columns": _columns_0020(),
    "rollup_versions_table": _table(),
    "rollup_versions_backfill": _backfill(),
    "rollup_versions_view": _view(),
}
