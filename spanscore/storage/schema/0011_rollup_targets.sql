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

-- Hourly trend per rule, target, scorer, service, agent and model (and judge model), as in 0004.
CREATE OR REPLACE VIEW {database}.score_trend_hourly AS
SELECT
    Bucket AS Hour,
    Rule, Target, Scorer, ServiceName, AgentName, Model, JudgeModel,
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
FROM (SELECT * REPLACE (if(Target = '', 'run', Target) AS Target) FROM {database}.scores_1h)
GROUP BY Hour, Rule, Target, Scorer, ServiceName, AgentName, Model, JudgeModel;

-- Every ok score, exact, as in 0004, with its target and session.
CREATE OR REPLACE VIEW {database}.worst_runs AS
SELECT
    RunTimestamp,
    Rule, Target, Scorer, ScorerVersion, ServiceName, AgentName, Model,
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

-- Coverage per rule, target and day, as in 0004. For a span target a candidate is a span
-- (an LLM call, a tool call, a retrieval), for a session target a session.
CREATE OR REPLACE VIEW {database}.coverage_daily AS
SELECT
    toDate(RunTimestamp) AS Day,
    Rule,
    Target,
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
GROUP BY Day, Rule, Target;

-- Judge spend per day, rule, target, scorer and judge model, as in 0004.
CREATE OR REPLACE VIEW {database}.judge_cost_daily AS
SELECT
    toDate(Bucket) AS Day,
    Rule, Target, Scorer, JudgeModel,
    countMerge(ScoresState) AS Scores,
    sumMerge(CostUsdState) AS CostUsd,
    sumMerge(InputTokensState) AS InputTokens,
    sumMerge(OutputTokensState) AS OutputTokens,
    CostUsd / nullIf(Scores, 0) AS CostUsdPerScore
FROM (SELECT * REPLACE (if(Target = '', 'run', Target) AS Target) FROM {database}.scores_1h)
GROUP BY Day, Rule, Target, Scorer, JudgeModel;

-- Each score next to its scored span, as in 0004, with its target.
CREATE OR REPLACE VIEW {database}.scores_with_spans AS
SELECT
    s.RunTimestamp AS RunTimestamp,
    s.Rule AS Rule,
    s.Target AS Target,
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
