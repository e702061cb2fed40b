-- Comparisons of versions (#41) read an hourly roll-up of the sums their estimator needs, per rule, scorer
-- and version (every attribute kept with the scores, and the score columns a comparison groups by), instead
-- of adding up `scores FINAL`. The statements are written out by spanscore/storage/schema/version_rollup.py.
--
-- As with scores_1m and scores_1h (migration 0004), the view sees inserts, not merges: a score written again
-- under its ScoreId (a rescore, a replay) is counted once per write here, where `scores FINAL` keeps one.

{rollup_versions_table};

-- A replayed batch reaches this table through the view as well: the same window as every other target
-- (migration 0013), so the block whose insert token the table has taken is dropped, not counted twice.
ALTER TABLE {database}.scores_versions_1h MODIFY SETTING non_replicated_deduplication_window = 10000;

-- Backfill before the view exists, and only into an empty table: a rerun copies nothing twice. Scores
-- written between this copy and the view below are missing from the roll-up (they stay in scores).
{rollup_versions_backfill};

{rollup_versions_view};
