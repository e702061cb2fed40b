-- scoring_claims: a fleet replica's claim on a run (or a session: TraceId '', the session id as RunId) it is
-- about to score, written and awaited before any judge call. Another replica that assembles the same run (a
-- batch the exporter sent again after a kill) reads it before it dispatches: a claim by a live replica, or a
-- score, means "leave it"; a claim by a replica no longer alive, with no score, is taken up. Session and
-- Epoch are the claimant's fence token (Keeper session id, creation zxid of its member node). Kept one day.
CREATE TABLE IF NOT EXISTS {database}.scoring_claims (
    At DateTime64(3) CODEC(Delta, ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    RunId String CODEC(ZSTD(1)),
    Replica String CODEC(ZSTD(1)),
    Instance String CODEC(ZSTD(1)),
    Session UInt64,
    Epoch UInt64
) ENGINE = MergeTree
ORDER BY (TraceId, RunId, At)
TTL toDateTime(At) + INTERVAL 1 DAY;
