-- OTLP metrics (#39): one table per data kind, in the layout of the OpenTelemetry Collector's ClickHouse
-- exporter, so that queries and panels written for it read these tables too. Times are UTC nanoseconds;
-- attribute values are stored as text, as for spans. The columns every table shares and the
-- GenAI roll-ups are written out by spanscore/storage/schema/metric_tables.py.

-- Sums (counters and up-down counters): AggregationTemporality 1 = delta, 2 = cumulative.
CREATE TABLE IF NOT EXISTS {database}.otel_metrics_sum (
{metrics_common_columns},
    Value Float64 CODEC(ZSTD(1)),
{metrics_exemplars},
    AggregationTemporality Int32 CODEC(ZSTD(1)),
    IsMonotonic Bool CODEC(Delta, ZSTD(1)),
{metrics_indexes_and_engine};

CREATE TABLE IF NOT EXISTS {database}.otel_metrics_gauge (
{metrics_common_columns},
    Value Float64 CODEC(ZSTD(1)),
{metrics_exemplars},
{metrics_indexes_and_engine};

-- Explicit-bucket histograms: BucketCounts has one more entry than ExplicitBounds (the last is the overflow
-- bucket). Sum, Min and Max are 0 when the sender left them out.
CREATE TABLE IF NOT EXISTS {database}.otel_metrics_histogram (
{metrics_common_columns},
    Count UInt64 CODEC(Delta, ZSTD(1)),
    Sum Float64 CODEC(ZSTD(1)),
    BucketCounts Array(UInt64) CODEC(ZSTD(1)),
    ExplicitBounds Array(Float64) CODEC(ZSTD(1)),
{metrics_exemplars},
    Min Float64 CODEC(ZSTD(1)),
    Max Float64 CODEC(ZSTD(1)),
    AggregationTemporality Int32 CODEC(ZSTD(1)),
{metrics_indexes_and_engine};

-- Exponential histograms: bucket i of the positive range covers (base^(offset+i), base^(offset+i+1)] with
-- base = 2^(2^-Scale).
CREATE TABLE IF NOT EXISTS {database}.otel_metrics_exponential_histogram (
{metrics_common_columns},
    Count UInt64 CODEC(Delta, ZSTD(1)),
    Sum Float64 CODEC(ZSTD(1)),
    Scale Int32 CODEC(ZSTD(1)),
    ZeroCount UInt64 CODEC(ZSTD(1)),
    PositiveOffset Int32 CODEC(ZSTD(1)),
    PositiveBucketCounts Array(UInt64) CODEC(ZSTD(1)),
    NegativeOffset Int32 CODEC(ZSTD(1)),
    NegativeBucketCounts Array(UInt64) CODEC(ZSTD(1)),
{metrics_exemplars},
    Min Float64 CODEC(ZSTD(1)),
    Max Float64 CODEC(ZSTD(1)),
    AggregationTemporality Int32 CODEC(ZSTD(1)),
{metrics_indexes_and_engine};

CREATE TABLE IF NOT EXISTS {database}.otel_metrics_summary (
{metrics_common_columns},
    Count UInt64 CODEC(Delta, ZSTD(1)),
    Sum Float64 CODEC(ZSTD(1)),
    ValueAtQuantiles Nested(Quantile Float64, Value Float64) CODEC(ZSTD(1)),
{metrics_indexes_and_engine};

-- GenAI client metrics per minute and per hour (genai_usage_1m, genai_usage_1h) and the views that read them
-- with cumulative series counted once (genai_usage_minute, genai_usage_hour): see metric_tables.py.
{metrics_genai_rollups};

-- A batch replayed from the spool after a lost answer carries its first try's insert token: these windows drop
-- the copy, in the tables and (with deduplicate_blocks_in_dependent_materialized_views) in the roll-ups.
ALTER TABLE {database}.otel_metrics_sum MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.otel_metrics_gauge MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.otel_metrics_histogram MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.otel_metrics_exponential_histogram MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.otel_metrics_summary MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.genai_usage_1m MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.genai_usage_1h MODIFY SETTING non_replicated_deduplication_window = 10000;
