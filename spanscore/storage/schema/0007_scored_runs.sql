-- What the scorers received: the assembled run of every scored run (input, output, system,
-- tool calls, context, ground truth and the attribute each came from), as one JSON document.
-- Keyed by (TraceId, RunId) so a retried, replayed or rescored run keeps one row, the newest.
-- Its TTL is the scores' TTL (storage.scores_ttl_days, see retention.py).
CREATE TABLE IF NOT EXISTS {database}.scored_runs (
    Timestamp DateTime64(9) CODEC(Delta, ZSTD(1)),
    RunTimestamp DateTime64(9) CODEC(Delta, ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    RunId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    AgentName LowCardinality(String) CODEC(ZSTD(1)),
    Run String CODEC(ZSTD(3)),
    Version UInt64
) ENGINE = ReplacingMergeTree(Version)
PARTITION BY toYYYYMM(RunTimestamp)
ORDER BY (TraceId, RunId);
