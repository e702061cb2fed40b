"""The SQL of the named reports (``spanscore report``), sent through the guarded query API like any query.

Values reach the SQL only after the CLI checked them (``spanscore.cli.report``): ids matching a strict
pattern, whole seconds, and a bucket chosen from ``BUCKETS``.
"""

from __future__ import annotations

BUCKETS = {"hour": "Bucket", "day": "toStartOfDay(Bucket)", "week": "toStartOfWeek(Bucket)"}
"""Report buckets over the hourly roll-up table's ``Bucket`` (the hour)."""
SCORERS_WITH_DATA_SQL = "SELECT DISTINCT Scorer FROM score_trend_hourly ORDER BY Scorer"


def trend_sql(scorer: str, bucket: str, seconds: int, rule: str | None = None) -> str:
    """Per bucket of the hourly roll-up: count, mean, weighted mean, median, pass rate and judge cost.

    The roll-up's states are merged over each bucket, so a day's median is the median of its scores: the mean
    of its hours' medians (the old ``p50_of_buckets``) gave 0.6667 for a scorer that only says 0 or 1.
    """
    rule_filter = f" AND Rule = '{rule}'" if rule else ""
    return (
        f"SELECT {bucket} AS bucket, countMerge(ScoredState) AS scores,"
        " round(sumMerge(ScoreSumState) / nullIf(countMerge(ScoredState), 0), 4) AS mean,"
        " round(sumMerge(WeightedScoreSumState) / nullIf(sumIfMerge(WeightSumState), 0), 4) AS weighted_mean,"
        " round(quantilesMerge(0.5, 0.9, 0.99)(QuantilesState)[1], 4) AS p50,"
        " round(countIfMerge(PassState) / nullIf(countIfMerge(PassState) + countIfMerge(FailState), 0), 4)"
        " AS pass_rate,"
        # Unknown (NULL) when litellm could not price a judge call of the bucket: a partial sum is not its cost.
        " if(countIfMerge(UnpricedState) > 0, NULL, round(sumMerge(CostUsdState), 6)) AS judge_cost_usd"
        f" FROM scores_1h WHERE Scorer = '{scorer}' AND NOT startsWith(Rule, 'source:'){rule_filter}"
        f" AND Bucket >= now() - INTERVAL {seconds} SECOND"
        " GROUP BY bucket ORDER BY bucket"
    )


def agreement_sql(scorer: str, name: str, source: str, seconds: int) -> str:
    """Each outside judgement ``name`` from ``source`` beside spanscore's latest ``scorer`` score of its trace."""
    return (
        "SELECT j.TraceId AS trace_id, j.Label AS judge_label, j.Score AS judge_score,"
        " h.Label AS human_label, h.Score AS human_score FROM"
        " (SELECT TraceId, argMax(Label, Timestamp) AS Label, argMax(Score, Timestamp) AS Score FROM scores FINAL"
        f" WHERE Scorer = '{scorer}' AND Source = 'spanscore' AND Status = 'ok'"
        f" AND RunTimestamp >= now() - INTERVAL {seconds} SECOND GROUP BY TraceId) AS j"
        " INNER JOIN (SELECT TraceId, Label, Score FROM scores FINAL"
        f" WHERE Scorer = '{name}' AND Source = '{source}'"
        f" AND RunTimestamp >= now() - INTERVAL {seconds} SECOND) AS h ON h.TraceId = j.TraceId"
        " ORDER BY trace_id"
    )
