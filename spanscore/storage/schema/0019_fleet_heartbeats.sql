-- fleet_heartbeats: each fleet replica writes, every few seconds, whether it has Keeper and is a member.
-- Read by the replicas themselves when they lose Keeper: a replica cut alone leaves the load balancer's
-- rotation (its peers still have Keeper), while a fleet that lost Keeper everywhere stays in rotation, so
-- that ingest goes on (docs/deployment.md, "Running a fleet"). Instance tells two processes apart even when
-- they were given the same replica name. Kept one day.
CREATE TABLE IF NOT EXISTS {database}.fleet_heartbeats (
    At DateTime64(3) CODEC(Delta, ZSTD(1)),
    Replica String CODEC(ZSTD(1)),
    Instance String CODEC(ZSTD(1)),
    Joined UInt8
) ENGINE = MergeTree
ORDER BY (At, Instance)
TTL toDateTime(At) + INTERVAL 1 DAY;
