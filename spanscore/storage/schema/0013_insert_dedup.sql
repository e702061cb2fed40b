-- Exactly once on replay: the write path sends every batch with a random insert_deduplication_token,
-- the same on every attempt (the spool keeps it with the batch), and each table below drops a block
-- whose token it has already taken. That needs a window on every table an insert reaches, the
-- materialized views' targets included: ClickHouse fires a view even when the source table dropped the
-- block, and only the target's own window drops the view's copy. 10,000 blocks is the window the
-- Replicated engines keep by default (cluster mode turns these into replicated_deduplication_window).
ALTER TABLE {database}.otel_traces MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.otel_traces_trace_id_ts MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.otel_logs MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.scores MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.scores_1m MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.scores_1h MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.score_decisions MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE {database}.scored_runs MODIFY SETTING non_replicated_deduplication_window = 10000;
