-- A scored run belongs to the service that sent it (issue #26): keyed by (TraceId, RunId) alone, a
-- second service reusing a trace and span id replaced the first service's stored run. RunService is
-- the run's ServiceName again, appended to the sorting key (ClickHouse takes only a column added in
-- the same ALTER, without a default). Rows stored before carry '' there; readers pick one row per
-- (RunId, ServiceName), the newest Version, so a run rescored after the upgrade is not shown twice.
ALTER TABLE {database}.scored_runs ADD COLUMN IF NOT EXISTS RunService LowCardinality(String) CODEC(ZSTD(1)), MODIFY ORDER BY (TraceId, RunId, RunService);
