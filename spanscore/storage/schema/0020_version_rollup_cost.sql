-- Cost per run beside latency and tokens in version comparisons (#41), and sum(w^4) for the small-sample
-- degrees of freedom of the comparison's variance (W4, with N4 the scores it covers). The roll-up keeps the average of
-- Attributes['run.cost_usd'] (what the run's model calls cost, from their spans or litellm's price table; absent
-- when unknown, so left out of the average rather than counted as 0). The statements are written out by
-- spanscore/storage/schema/version_rollup.py.
--
-- Hours rolled up before this migration have an empty state: their cost is unknown, and a window over them
-- averages the newer hours only; their N4 is 0, so a window over them falls back to Kish's degrees of freedom. The view is replaced so that new scores fill the column; scores inserted
-- between the DROP and the CREATE below are missing from the roll-up (they stay in scores).

{rollup_versions_added_columns};

DROP VIEW IF EXISTS {database}.scores_versions_1h_mv;

{rollup_versions_view};
