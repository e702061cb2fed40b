-- The roll-ups and the views over scores split by target (what a rule scores: 'run', 'llm',
-- 'tool', 'retrieval' or 'session', migration 0009), so a chart of an LLM-call rule or a
-- session rule can be told from the run rules without knowing the configuration.
--
-- Target is appended to each roll-up table and to its sorting key. ClickHouse only lets a
-- column into the sorting key in the ALTER that adds it, and only without a default, so rows
-- rolled up before this migration hold Target = '': score_trend_hourly reads those as 'run'.
-- That is exact for everything rolled up before migration 0009; scores of span and session
-- rules written between 0009 and this migration are among them too (scores FINAL has their
-- true Target). The ALTER is safe to run twice (the column and the key are then unchanged).
{rollup_target_columns};

-- Each grain's materialized view is dropped and created again with Target. Scores inserted
-- in the moment between the two statements are missing from the roll-ups (they stay in scores).
{rollup_target_views};

{dashboard_target_views};
