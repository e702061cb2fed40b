-- A span batch retried after a failure that happened part-way down the view chain
-- (intake -> otel_traces -> otel_traces_trace_id_ts; ClickHouse does not make the chain
-- atomic) must not be stored twice. The writer retries the exact same batch, and these
-- windows let each table drop a block it has already taken; the insert sets
-- deduplicate_blocks_in_dependent_materialized_views so the views are checked too.
ALTER TABLE {database}.otel_traces MODIFY SETTING non_replicated_deduplication_window = 1000;

ALTER TABLE {database}.otel_traces_trace_id_ts MODIFY SETTING non_replicated_deduplication_window = 1000;
