-- Scores over time: per-minute and per-hour roll-ups kept by ClickHouse itself, and the
-- views behind the dashboards (docs/dashboards.md).
--
-- How the roll-ups count. `scores` is a ReplacingMergeTree: a retried or replayed score is
-- written again under the same ScoreId and only a merge (or FINAL) folds the copies. A
-- materialized view sees inserts, not merges, so scores_1m and scores_1h count every
-- insert: a replayed score is counted twice there. They are the cheap, approximate series
-- for charts. Exact numbers come from `scores FINAL` (worst_runs and scores_with_spans read
-- it). History present when this migration runs is copied in once from `scores FINAL`.
--
-- Only Status = 'ok' rows carry a Score; other statuses are counted in their own columns.
-- The weight of a score is 1 / SampleRate (the inclusion probability of its run); a
-- SampleRate of 0, which a sampled run never has, is taken as 1 rather than dividing by 0.
-- Columns ending in State hold aggregate states: read them with the -Merge combinator
-- (countMerge, sumMerge, quantilesMerge(0.5, 0.9, 0.99)) grouped by the columns you keep,
-- or use score_trend_hourly, which does that.

{rollup_tables};

-- Backfill before the views exist, and only into an empty table: if the migration stops
-- half way and runs again, nothing is copied twice. Scores written by another replica
-- between this copy and the view below are missing from the roll-ups (they stay in scores).
{rollup_backfills};

{rollup_views};

{dashboard_views};

-- The roll-up tables, their backfills and their materialized views above (rollup_tables,
-- rollup_backfills, rollup_views) are written out by spanscore/storage/schema/rollups.py, which
-- declares each measure once for both grains.
