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

-- Hourly trend per rule, scorer, service, agent and model (and judge model), finalized.
-- MeanScore is over ok scores; WeightedMeanScore weights each by 1 / SampleRate, which is
-- the estimate for all runs the rule covers. PassRate is over labelled scores. Counts are
-- inserts (see above); re-aggregate with the sums when grouping more coarsely, never by
-- averaging these means.
CREATE VIEW IF NOT EXISTS {database}.score_trend_hourly AS
SELECT
    Bucket AS Hour,
    Rule, Scorer, ServiceName, AgentName, Model, JudgeModel,
    toBool(max(HigherIsBetter)) AS HigherIsBetter,
    countMerge(ScoresState) AS Scores,
    countMerge(ScoredState) AS Scored,
    sumMerge(ScoreSumState) AS ScoreSum,
    sumMerge(ScoreSumState) / nullIf(countMerge(ScoredState), 0) AS MeanScore,
    sumMerge(WeightedScoreSumState) AS WeightedScoreSum,
    sumIfMerge(WeightSumState) AS WeightSum,
    sumMerge(WeightedScoreSumState) / nullIf(sumIfMerge(WeightSumState), 0) AS WeightedMeanScore,
    quantilesMerge(0.5, 0.9, 0.99)(QuantilesState) AS ScoreQuantiles,
    ScoreQuantiles[1] AS P50,
    ScoreQuantiles[2] AS P90,
    ScoreQuantiles[3] AS P99,
    countIfMerge(PassState) AS Passed,
    countIfMerge(FailState) AS Failed,
    Passed / nullIf(Passed + Failed, 0) AS PassRate,
    countIfMerge(StatusOkState) AS StatusOk,
    countIfMerge(NotApplicableState) AS NotApplicable,
    countIfMerge(MissingInputState) AS MissingInput,
    countIfMerge(ErrorState) AS Errors,
    sumMerge(CostUsdState) AS CostUsd,
    sumMerge(InputTokensState) AS InputTokens,
    sumMerge(OutputTokensState) AS OutputTokens
FROM {database}.scores_1h
GROUP BY Hour, Rule, Scorer, ServiceName, AgentName, Model, JudgeModel;

-- Every ok score, exact (scores FINAL), with what a reader needs to open the run.
-- OrientedScore is Score when higher is better and -Score otherwise, so
-- ORDER BY OrientedScore ASC lists the worst runs first whatever the scorer's direction.
CREATE VIEW IF NOT EXISTS {database}.worst_runs AS
SELECT
    RunTimestamp,
    Rule, Scorer, ScorerVersion, ServiceName, AgentName, Model,
    Score,
    HigherIsBetter,
    if(HigherIsBetter, Score, -Score) AS OrientedScore,
    Label,
    Reason,
    TraceId,
    SpanId,
    RunId,
    SessionId,
    UserId,
    RunDurationMs,
    RunError
FROM {database}.scores FINAL
WHERE Status = 'ok' AND Score IS NOT NULL;

-- Coverage per rule and day from the decisions (score_decisions FINAL: one decision per
-- rule and run). Candidates are runs inside the rule's population (every decision but
-- filtered_out); Scored are runs the rule sampled (sampled, or duplicate: sampled before).
CREATE VIEW IF NOT EXISTS {database}.coverage_daily AS
SELECT
    toDate(RunTimestamp) AS Day,
    Rule,
    countIf(Decision != 'filtered_out') AS Candidates,
    countIf(Decision IN ('sampled', 'duplicate')) AS Scored,
    Scored / nullIf(Candidates, 0) AS Coverage,
    countIf(Decision = 'sampled_out') AS SampledOut,
    countIf(Decision = 'over_budget') AS OverBudget,
    countIf(Decision = 'missing_input') AS MissingInput,
    countIf(Decision = 'not_applicable') AS NotApplicable,
    countIf(Decision = 'failed') AS Failed,
    countIf(Decision = 'filtered_out') AS FilteredOut
FROM {database}.score_decisions FINAL
GROUP BY Day, Rule;

-- Judge spend per day, rule, scorer and judge model, from the hourly roll-up (inserts,
-- so a replayed judge call that was really made again is counted again, as it was paid).
CREATE VIEW IF NOT EXISTS {database}.judge_cost_daily AS
SELECT
    toDate(Bucket) AS Day,
    Rule, Scorer, JudgeModel,
    countMerge(ScoresState) AS Scores,
    sumMerge(CostUsdState) AS CostUsd,
    sumMerge(InputTokensState) AS InputTokens,
    sumMerge(OutputTokensState) AS OutputTokens,
    CostUsd / nullIf(Scores, 0) AS CostUsdPerScore
FROM {database}.scores_1h
GROUP BY Day, Rule, Scorer, JudgeModel;

-- Each score next to its scored span: latency and error status as the span recorded them.
-- A LEFT join keeps scores whose spans are gone (span TTL shorter than score TTL);
-- ANY takes one copy of a span that was stored twice.
CREATE VIEW IF NOT EXISTS {database}.scores_with_spans AS
SELECT
    s.RunTimestamp AS RunTimestamp,
    s.Rule AS Rule,
    s.Scorer AS Scorer,
    s.ServiceName AS ServiceName,
    s.AgentName AS AgentName,
    s.Model AS Model,
    s.Score AS Score,
    s.Label AS Label,
    s.Status AS Status,
    s.HigherIsBetter AS HigherIsBetter,
    s.TraceId AS TraceId,
    s.SpanId AS SpanId,
    s.RunId AS RunId,
    s.RunDurationMs AS RunDurationMs,
    s.RunError AS RunError,
    t.SpanName AS SpanName,
    if(t.SpanId != '', t.Duration / 1e6, NULL) AS SpanDurationMs,
    t.StatusCode AS SpanStatusCode,
    t.StatusMessage AS SpanStatusMessage,
    t.SpanId != '' AS SpanFound
FROM {database}.scores AS s FINAL
ANY LEFT JOIN {database}.otel_traces AS t ON s.TraceId = t.TraceId AND s.SpanId = t.SpanId;

-- The roll-up tables, their backfills and their materialized views above (rollup_tables,
-- rollup_backfills, rollup_views) are written out by spanscore/storage/schema/rollups.py, which
-- declares each measure once for both grains.
