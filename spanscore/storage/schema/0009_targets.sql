-- What a score or decision is about (rule target): 'run' (an agent run), 'llm', 'tool' or
-- 'retrieval' (one span inside a run; RunId and SpanId are then that span's id) or 'session'
-- (a conversation; RunId is then the session id, SpanId the root span of its latest run).
-- Rows written before this migration were all about runs.
ALTER TABLE {database}.scores ADD COLUMN IF NOT EXISTS Target LowCardinality(String) DEFAULT 'run' CODEC(ZSTD(1));

ALTER TABLE {database}.score_decisions ADD COLUMN IF NOT EXISTS Target LowCardinality(String) DEFAULT 'run' CODEC(ZSTD(1));

-- scored_runs also keeps every turn of a session a session rule may score (Target 'run' with a
-- SessionId), so a session that continues after a restart, or after its turns left memory, is
-- scored whole: its earlier turns are read back from here.
ALTER TABLE {database}.scored_runs ADD COLUMN IF NOT EXISTS Target LowCardinality(String) DEFAULT 'run' CODEC(ZSTD(1));

ALTER TABLE {database}.scored_runs ADD COLUMN IF NOT EXISTS SessionId String DEFAULT '' CODEC(ZSTD(1));
