"""Migration 0016's repeated DDL: the five ``otel_metrics_*`` tables' shared columns and the GenAI roll-ups.

The tables follow the layout of the OpenTelemetry Collector's ClickHouse exporter (its column names and types),
so queries and Grafana panels written for that exporter read spanscore's tables as they are.

**GenAI roll-ups.** ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration`` are histograms.
An SDK sends them either as deltas (each point counts what happened since the last export) or cumulative
(each point counts everything since the series' start time, so every export repeats what the last one said).
Summing cumulative points counts each call once per export. The roll-up tables therefore keep two things per
bucket: the sum of delta points, and for each cumulative series (``Series``: a hash of its resource, scope,
attributes and start time; 0 for delta points) its last count and sum in the bucket. The read views
``genai_usage_minute`` and ``genai_usage_hour`` turn a cumulative series' last values into increases (the
value less the series' value at the end of its previous bucket; the series' first bucket counts from its
start) and add them to the deltas. A process restart begins a new series (a new start time), so a reset is
never read as a negative increase.

Migrations are frozen once applied: a change here is a new migration, not an edit.
"""

from __future__ import annotations

TOKENS = "gen_ai.client.token.usage"
DURATION = "gen_ai.client.operation.duration"
_I = "    "

COMMON_COLUMNS = (
    "ResourceAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1))",
    "ResourceSchemaUrl String CODEC(ZSTD(1))",
    "ScopeName String CODEC(ZSTD(1))",
    "ScopeVersion String CODEC(ZSTD(1))",
    "ScopeAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1))",
    "ScopeDroppedAttrCount UInt32 CODEC(ZSTD(1))",
    "ScopeSchemaUrl String CODEC(ZSTD(1))",
    "ServiceName LowCardinality(String) CODEC(ZSTD(1))",
    "MetricName LowCardinality(String) CODEC(ZSTD(1))",
    "MetricDescription String CODEC(ZSTD(1))",
    "MetricUnit String CODEC(ZSTD(1))",
    "Attributes Map(LowCardinality(String), String) CODEC(ZSTD(1))",
    "StartTimeUnix DateTime64(9) CODEC(Delta, ZSTD(1))",
    "TimeUnix DateTime64(9) CODEC(Delta, ZSTD(1))",
    "Flags UInt32 CODEC(ZSTD(1))",
)
EXEMPLARS = (
    "Exemplars Nested(FilteredAttributes Map(LowCardinality(String), String), TimeUnix DateTime64(9), "
    "Value Float64, SpanId String, TraceId String) CODEC(ZSTD(1))"
)
_INDEXES = (
    "INDEX idx_res_attr_key mapKeys(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1",
    "INDEX idx_attr_key mapKeys(Attributes) TYPE bloom_filter(0.01) GRANULARITY 1",
    "INDEX idx_attr_value mapValues(Attributes) TYPE bloom_filter(0.01) GRANULARITY 1",
)
_TAIL = (
    ") ENGINE = MergeTree\n"
    "PARTITION BY toDate(TimeUnix)\n"
    "ORDER BY (ServiceName, MetricName, toStartOfHour(TimeUnix), cityHash64(Attributes), TimeUnix)\n"
    "SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1"
)


def _joined(lines: tuple[str, ...]) -> str:
    return ",\n".join(_I + line for line in lines)


_ROLLUP_DIMENSIONS = (
    "Bucket DateTime CODEC(Delta, ZSTD(1))",
    "MetricName LowCardinality(String)",
    "ServiceName LowCardinality(String)",
    "Agent LowCardinality(String)",
    "Model LowCardinality(String)",
    "TokenType LowCardinality(String)",
    "Series UInt64",
)
_ROLLUP_MEASURES = (
    "DeltaCount SimpleAggregateFunction(sum, UInt64)",
    "DeltaSum SimpleAggregateFunction(sum, Float64)",
    "LastCount AggregateFunction(argMax, UInt64, DateTime64(9))",
    "LastSum AggregateFunction(argMax, Float64, DateTime64(9))",
)
_KEY = "MetricName, ServiceName, Agent, Model, TokenType, Series, Bucket"
_CUMULATIVE = "AggregationTemporality = 2"
_GRAINS = (("1m", "minute", "toStartOfMinute"), ("1h", "hour", "toStartOfHour"))


def _rollup(database: str, grain: str, bucket: str) -> str:
    table = f"{database}.genai_usage_{grain}"
    create = (
        f"CREATE TABLE IF NOT EXISTS {table} (\n{_joined(_ROLLUP_DIMENSIONS + _ROLLUP_MEASURES)}\n"
        f") ENGINE = AggregatingMergeTree\nPARTITION BY toYYYYMM(Bucket)\nORDER BY ({_KEY})"
    )
    view = f"""CREATE MATERIALIZED VIEW IF NOT EXISTS {table}_mv TO {table} AS
SELECT
    {bucket}(TimeUnix) AS Bucket,
    MetricName,
    ServiceName,
    if(Attributes['gen_ai.agent.name'] != '', Attributes['gen_ai.agent.name'], ServiceName) AS Agent,
    if(Attributes['gen_ai.response.model'] != '', Attributes['gen_ai.response.model'],
       Attributes['gen_ai.request.model']) AS Model,
    Attributes['gen_ai.token.type'] AS TokenType,
    if({_CUMULATIVE}, cityHash64(ResourceAttributes, ScopeName, Attributes, StartTimeUnix), 0) AS Series,
    sum(if({_CUMULATIVE}, 0, Count)) AS DeltaCount,
    sum(if({_CUMULATIVE}, 0., Sum)) AS DeltaSum,
    argMaxState(if({_CUMULATIVE}, Count, 0), TimeUnix) AS LastCount,
    argMaxState(if({_CUMULATIVE}, Sum, 0.), TimeUnix) AS LastSum
FROM {database}.otel_metrics_histogram
WHERE MetricName IN ('{TOKENS}', '{DURATION}')
GROUP BY {_KEY}"""
    return f"{create};\n\n{view}"


def _read_view(database: str, grain: str, name: str) -> str:
    """Per bucket, service, agent and model: calls, seconds, input and output tokens, each counted once."""
    return f"""CREATE VIEW IF NOT EXISTS {database}.genai_usage_{name} AS
WITH per_series AS (
    SELECT {_KEY}, sum(DeltaCount) AS delta_count, sum(DeltaSum) AS delta_sum,
           argMaxMerge(LastCount) AS last_count, argMaxMerge(LastSum) AS last_sum
    FROM {database}.genai_usage_{grain}
    GROUP BY {_KEY}
), increases AS (
    SELECT Bucket, MetricName, ServiceName, Agent, Model, TokenType,
           if(Series = 0, toFloat64(delta_count),
              greatest(toFloat64(last_count) - lagInFrame(toFloat64(last_count), 1, 0.) OVER series, 0.)) AS count,
           if(Series = 0, delta_sum, greatest(last_sum - lagInFrame(last_sum, 1, 0.) OVER series, 0.)) AS total
    FROM per_series
    WINDOW series AS (PARTITION BY MetricName, ServiceName, Agent, Model, TokenType, Series ORDER BY Bucket
                      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT
    Bucket, ServiceName, Agent, Model,
    toUInt64(round(sumIf(count, MetricName = '{DURATION}'))) AS Calls,
    sumIf(total, MetricName = '{DURATION}') AS DurationSum,
    DurationSum / nullIf(Calls, 0) AS MeanDuration,
    toUInt64(round(sumIf(total, MetricName = '{TOKENS}' AND TokenType = 'input'))) AS InputTokens,
    toUInt64(round(sumIf(total, MetricName = '{TOKENS}' AND TokenType = 'output'))) AS OutputTokens
FROM increases
GROUP BY Bucket, ServiceName, Agent, Model"""


FRAGMENTS = {
    "metrics_common_columns": _joined(COMMON_COLUMNS),
    "metrics_exemplars": _I + EXEMPLARS,
    "metrics_indexes_and_engine": _joined(_INDEXES) + "\n" + _TAIL,
    "metrics_genai_rollups": ";\n\n".join(
        [_rollup("{database}", grain, bucket) for grain, _, bucket in _GRAINS]
        + [_read_view("{database}", grain, name) for grain, name, _ in _GRAINS]
    ),
}
"""Placeholders of ``0016_otel_metrics.sql``; ``{database}`` is filled in after them, as in every migration."""
