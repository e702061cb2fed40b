-- One row per score. ScoreId is derived from (rule, scorer, scorer version, trace, scored span),
-- so retries, replays and several replicas write the same key; ReplacingMergeTree keeps the
-- row with the highest Version. The ORDER BY holds only columns fixed by that identity.
CREATE TABLE IF NOT EXISTS {database}.scores (
    ScoreId String CODEC(ZSTD(1)),
    {run_columns},
    Model LowCardinality(String) CODEC(ZSTD(1)),
    SessionId String CODEC(ZSTD(1)),
    UserId String CODEC(ZSTD(1)),
    Rule LowCardinality(String) CODEC(ZSTD(1)),
    Scorer LowCardinality(String) CODEC(ZSTD(1)),
    ScorerVersion LowCardinality(String) CODEC(ZSTD(1)),
    Score Nullable(Float64),
    Label LowCardinality(String) CODEC(ZSTD(1)),
    Reason String CODEC(ZSTD(1)),
    Status LowCardinality(String) CODEC(ZSTD(1)),
    Error String CODEC(ZSTD(1)),
    SampleRate Float64,
    HigherIsBetter Bool,
    JudgeModel LowCardinality(String) CODEC(ZSTD(1)),
    InputTokens UInt64,
    OutputTokens UInt64,
    CostUsd Float64,
    DurationMs Float64,
    ReadyReason LowCardinality(String) CODEC(ZSTD(1)),
    RunDurationMs Float64,
    RunError String CODEC(ZSTD(1)),
    Attributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    Version UInt64,
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1
) ENGINE = ReplacingMergeTree(Version)
PARTITION BY toYYYYMM(RunTimestamp)
ORDER BY (Scorer, Rule, toDate(RunTimestamp), ScoreId);

-- Why each candidate run was or was not scored, per rule: the denominator of coverage.
CREATE TABLE IF NOT EXISTS {database}.score_decisions (
    {run_columns},
    Rule LowCardinality(String) CODEC(ZSTD(1)),
    Decision LowCardinality(String) CODEC(ZSTD(1)),
    Probability Float64,
    Reason String CODEC(ZSTD(1)),
    ReadyReason LowCardinality(String) CODEC(ZSTD(1)),
    Version UInt64
) ENGINE = ReplacingMergeTree(Version)
PARTITION BY toYYYYMM(RunTimestamp)
ORDER BY (Rule, toDate(RunTimestamp), RunId);

-- Scores as OpenTelemetry GenAI evaluation events of the scored span.
CREATE VIEW IF NOT EXISTS {database}.score_events AS
SELECT
    Timestamp,
    TraceId,
    SpanId,
    'gen_ai.evaluation.result' AS EventName,
    map(
        'gen_ai.evaluation.name', Scorer,
        'gen_ai.evaluation.score.value', if(isNull(Score), '', toString(Score)),
        'gen_ai.evaluation.score.label', Label,
        'gen_ai.evaluation.explanation', Reason,
        'spanscore.rule', Rule,
        'spanscore.status', Status,
        'spanscore.scorer.version', ScorerVersion
    ) AS Attributes
FROM {database}.scores FINAL
WHERE Status = 'ok';

-- Every event of every span, the spans' own and the score events, in one place.
CREATE VIEW IF NOT EXISTS {database}.span_events AS
SELECT
    Events.Timestamp AS Timestamp,
    TraceId,
    SpanId,
    toString(Events.Name) AS EventName,
    Events.Attributes AS Attributes
FROM {database}.otel_traces
ARRAY JOIN Events
UNION ALL
SELECT Timestamp, TraceId, SpanId, EventName, Attributes FROM {database}.score_events;
