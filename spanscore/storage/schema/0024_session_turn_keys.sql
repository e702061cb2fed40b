-- Every session new to memory asks for its turns stored earlier (a restart, keep_scored_s, another replica):
-- the keys of its turns by SessionId. scored_runs is sorted by trace, so that read scanned the SessionId
-- column of every recent part, a cost that grows with the table (20 ms for 100 sessions among 200,000 runs,
-- once per poll that makes sessions ready). This projection keeps those keys sorted by session: the read
-- takes the granules of the sessions asked for, whatever the table holds. 'rebuild' keeps it through the
-- merges that fold a ReplacingMergeTree's copies (the engine refuses a projection here without a mode).
ALTER TABLE {database}.scored_runs MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild';

ALTER TABLE {database}.scored_runs ADD PROJECTION IF NOT EXISTS session_turn_keys (
    SELECT SessionId, RunTimestamp, TraceId, RunId, Target ORDER BY SessionId, RunTimestamp
);

ALTER TABLE {database}.scored_runs MATERIALIZE PROJECTION session_turn_keys;
