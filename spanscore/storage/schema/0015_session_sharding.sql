-- On a cluster a session's score and decision are sharded by the session, not by a trace: their ids are the
-- session's, but their TraceId is the latest turn's trace, so a rescored session's copies went to several
-- shards, where ReplacingMergeTree (and FINAL) never meets them. cluster.py turns each of these statements
-- into the local table's comment and a Distributed table re-created with the key
-- cityHash64(if(Target = 'session', RunId, TraceId)); a run's rows keep their trace's shard. On one node it
-- only sets the comment.
ALTER TABLE {database}.scores MODIFY COMMENT 'sharded by session: session rows by RunId, others by TraceId';

ALTER TABLE {database}.score_decisions MODIFY COMMENT 'sharded by session: session rows by RunId, others by TraceId';
