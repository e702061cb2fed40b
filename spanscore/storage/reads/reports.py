"""The SQL of the named reports (``spanscore report``), sent through the guarded query API like any query.

Values reach the SQL only after the CLI checked them (``spanscore.cli.report``): ids matching a strict
pattern, whole seconds, and a bucket chosen from ``BUCKETS``.
"""

from __future__ import annotations

BUCKETS = {"hour": "Hour", "day": "toStartOfDay(Hour)", "week": "toStartOfWeek(Hour)"}
SCORERS_WITH_DATA_SQL = "SELECT DISTINCT Scorer FROM score_trend_hourly ORDER BY Scorer"


def trend_sql(scorer: str, bucket: str, seconds: int, rule: str | None = None) -> str:
    """Per bucket of the hourly roll-up: count, mean, weighted mean, p50, pass rate and judge cost."""
    rule_filter = f" AND Rule = '{rule}'" if rule else ""
    return (
        f"SELECT {bucket} AS bucket, sum(Scored) AS scores,"
        " round(sum(ScoreSum) / nullIf(sum(Scored), 0), 4) AS mean,"
        " round(sum(WeightedScoreSum) / nullIf(sum(WeightSum), 0), 4) AS weighted_mean,"
        " round(avg(P50), 4) AS p50_of_buckets,"
        " round(sum(Passed) / nullIf(sum(Passed) + sum(Failed), 0), 4) AS pass_rate,"
        " round(sum(CostUsd), 6) AS judge_cost_usd"
        f" FROM score_trend_hourly WHERE Scorer = '{scorer}'{rule_filter}"
        f" AND Hour >= now() - INTERVAL {seconds} SECOND"
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
