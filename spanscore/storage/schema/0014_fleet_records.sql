-- What a fleet must not forget when Keeper does (docs/deployment.md, "Running a fleet").
-- alert_deliveries: one row per phase of an alert notification ("sending" before the first attempt,
-- "done" after the last), so that a new leader neither sends again what another replica is sending or
-- has sent, nor opens a new incident for a firing Keeper forgot (the newest firing row keeps its id).
CREATE TABLE IF NOT EXISTS {database}.alert_deliveries (
    At DateTime64(3) CODEC(Delta, ZSTD(1)),
    DeliveryId String CODEC(ZSTD(1)),
    Alert String CODEC(ZSTD(1)),
    FiringId String CODEC(ZSTD(1)),
    Status LowCardinality(String),
    Phase LowCardinality(String),
    Replica String CODEC(ZSTD(1)),
    StartedAt Float64,
    Event String CODEC(ZSTD(3))
) ENGINE = MergeTree
ORDER BY (Alert, DeliveryId, At)
TTL toDateTime(At) + INTERVAL 90 DAY;

-- fleet_rule_sets: every rule set a fleet published, so that a Keeper that lost its data gets the
-- fleet's newest set back (not the config file of whichever replica connects first), with a
-- generation that keeps counting up.
CREATE TABLE IF NOT EXISTS {database}.fleet_rule_sets (
    At DateTime64(3) CODEC(Delta, ZSTD(1)),
    Generation UInt64,
    Replica String CODEC(ZSTD(1)),
    Document String CODEC(ZSTD(3))
) ENGINE = MergeTree
ORDER BY (Generation, At)
TTL toDateTime(At) + INTERVAL 90 DAY;
