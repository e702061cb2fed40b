-- fleet_heartbeats.Fleet: the Keeper path (chroot and fleet.path) of the fleet a heartbeat's replica belongs to.
-- Two fleets writing one database share its rule sets, scorings and spend, and each scores with the other's
-- rules: a replica that sees another fleet's heartbeats in its database says so (/readyz, status, an ERROR).
-- Empty in rows written before this column existed.
ALTER TABLE {database}.fleet_heartbeats ADD COLUMN IF NOT EXISTS Fleet String DEFAULT '' CODEC(ZSTD(1));
