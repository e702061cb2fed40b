"""The dashboard's windowed reads: scorers over the window, and the three time series it charts.

The score trend, coverage and judge cost are read over one window and in one bucket (``daily`` or hourly),
so the three charts share their time axis: the window starts at the hour ``since`` falls in (the roll-ups
are hourly, so a shorter window still shows its hour), and a bucket is an hour or a UTC day.

Spanscore's own scorers are read from the hourly roll-up (``score_trend_hourly``). Outside scores (feedback,
``Rule = 'source:<source>'``) are read exactly from ``scores FINAL`` instead: a retried POST, a changed label
and a score posted before its trace (stored, then replaced once resolved) are one row there but two inserts
in the roll-up. Their rows carry ``source``; spanscore's own carry ``''``. ``scored`` counts every ``ok``
score (a label counts, with or without a number), ``valued`` the ones with a number, which the mean is over.

Coverage is read from ``score_decisions FINAL`` in the same buckets (the ``coverage_daily`` view is per day
only), judge cost from ``score_trend_hourly`` (``judge_cost_daily`` is per day only). A bucket and judge model
with any score litellm could not price has ``cost_usd`` None (unknown), next to the priced part and the count.
"""

from __future__ import annotations

from spanscore.storage.schema.dashboard_views import coverage_measures, snake

_START = "toStartOfHour(now() - toIntervalSecond({since:UInt32}))"
_RULE = "({rule:String} = '' OR Rule = {rule:String})"
_TARGET = "({target:String} = '' OR Target = {target:String})"
_SCORER = "({scorer:String} = '' OR Scorer = {scorer:String})"
_NAMES = "(empty({names:Array(String)}) OR has({names:Array(String)}, Scorer))"
"""The names a chart is drawn for: the window's most scored ones when no scorer is chosen (``TOP_NAMES``)."""
_OUTSIDE = "startsWith(Rule, 'source:')"
_HOUR_BUCKET = "toUnixTimestamp(if({daily:Bool}, toStartOfDay(Hour), Hour))"
_RUN_BUCKET = (
    "toUnixTimestamp(if({daily:Bool}, toStartOfDay(toDateTime(RunTimestamp)), toStartOfHour(toDateTime(RunTimestamp))))"
)

_OWN_MEASURES = """toBool(max(HigherIsBetter)) AS higher_is_better,
       sum(StatusOk) AS scored,
       sum(Scored) AS valued,
       sum(ScoreSum) / nullIf(sum(Scored), 0) AS mean,
       sum(WeightedScoreSum) / nullIf(sum(WeightSum), 0) AS weighted_mean,
       sum(Passed) / nullIf(sum(Passed) + sum(Failed), 0) AS pass_rate,
       sum(Errors) AS errors,
       toUInt64(0) AS pending,
       toUInt64(0) AS never_resolved"""
_ATTACHED = "Attributes['pending_span'] = '' AND Attributes['never_resolved'] = ''"
"""An outside score attached to its span: feedback still waiting for its trace, or whose trace never came, is
counted apart (``pending``, ``never_resolved``), not as scored."""
_OUTSIDE_MEASURES = f"""toBool(max(HigherIsBetter)) AS higher_is_better,
       countIf(Status = 'ok' AND {_ATTACHED}) AS scored,
       countIf(Score IS NOT NULL AND {_ATTACHED}) AS valued,
       sumIf(Score, {_ATTACHED}) / nullIf(countIf(Score IS NOT NULL AND {_ATTACHED}), 0) AS mean,
       sumIf(Score / if(SampleRate > 0, SampleRate, 1.), {_ATTACHED})
           / nullIf(sumIf(1. / if(SampleRate > 0, SampleRate, 1.), Score IS NOT NULL AND {_ATTACHED}), 0)
           AS weighted_mean,
       countIf(Label = 'pass' AND {_ATTACHED}) / nullIf(countIf(Label IN ('pass', 'fail') AND {_ATTACHED}), 0)
           AS pass_rate,
       countIf(Status = 'error' AND {_ATTACHED}) AS errors,
       countIf(Attributes['pending_span'] != '') AS pending,
       countIf(Attributes['never_resolved'] != '') AS never_resolved"""
_COLUMNS = (
    "scorer, source, higher_is_better, scored, valued, mean, weighted_mean, pass_rate, errors, pending, never_resolved"
)


def _own_and_outside(bucket: tuple[str, str] | None, scorer_filter: str) -> str:
    """One statement: the roll-up's rows of spanscore's rules, then the exact rows of outside scores."""
    own_time, outside_time = (f"{bucket[0]} AS time, ", f"{bucket[1]} AS time, ") if bucket else ("", "")
    group = "time, " if bucket else ""
    columns = f"{'time, ' if bucket else ''}{_COLUMNS}"
    return f"""
SELECT {columns} FROM (
SELECT {own_time}Scorer AS scorer, toString('') AS source,
       {_OWN_MEASURES}
FROM score_trend_hourly
WHERE Hour >= {_START} AND NOT {_OUTSIDE} AND {_RULE} AND {_TARGET}{scorer_filter}
GROUP BY {group}scorer
UNION ALL
SELECT {outside_time}Scorer AS scorer, toString(substring(Rule, 8)) AS source,
       {_OUTSIDE_MEASURES}
FROM scores FINAL
WHERE RunTimestamp >= {_START} AND {_OUTSIDE} AND {_RULE} AND {_TARGET}{scorer_filter}
GROUP BY {group}scorer, source
)
ORDER BY {group}scorer, source
"""


TOP_NAMES = 50
"""Names listed and charted at most; the rest are counted as "others". 200,000 outside-score names once made
every page load read and encode 40 MB, holding the event loop for seconds."""

_ALL_NAMES = _own_and_outside(None, "")
SCORERS_SQL = f"""
SELECT * FROM ({_ALL_NAMES})
ORDER BY scored DESC, scorer, source
LIMIT {{limit:UInt32}}
"""
NAME_TOTALS_SQL = f"SELECT count() AS names, sum(scored) AS scored FROM ({_ALL_NAMES})"
TREND_SQL = _own_and_outside((_HOUR_BUCKET, _RUN_BUCKET), f" AND {_SCORER} AND {_NAMES}")

COVERAGE_SQL = f"""
SELECT {_RUN_BUCKET} AS time, Rule AS rule, Target AS target,
       {coverage_measures(snake, indent="       ")}
FROM score_decisions FINAL
WHERE RunTimestamp >= {_START} AND {_RULE} AND {_TARGET}
GROUP BY time, rule, target
ORDER BY time, rule, target
"""

COST_SQL = f"""
SELECT {_HOUR_BUCKET} AS time, JudgeModel AS judge_model,
       sum(Scores) AS scores, if(sum(UnpricedScores) > 0, NULL, sum(PricedCostUsd)) AS cost_usd,
       sum(PricedCostUsd) AS priced_cost_usd, sum(UnpricedScores) AS unpriced_scores,
       sum(InputTokens) AS input_tokens, sum(OutputTokens) AS output_tokens
FROM score_trend_hourly
WHERE Hour >= {_START} AND JudgeModel != '' AND {_SCORER} AND {_RULE} AND {_TARGET}
GROUP BY time, judge_model
ORDER BY time, judge_model
"""

VALUE_RANGE_DAYS = 30
"""A name's scale is read from its values over the window or this many days, whichever is longer: a short
window of 1-5 ratings that all say 1 would otherwise look like a 0-1 score."""

VALUE_RANGES_SQL = f"""
SELECT Scorer AS scorer, toString(if({_OUTSIDE}, substring(Rule, 8), '')) AS source,
       min(Score) AS low, max(Score) AS high
FROM scores
WHERE RunTimestamp >= now() - toIntervalSecond(greatest({{since:UInt32}}, {VALUE_RANGE_DAYS * 86400}))
  AND Status = 'ok' AND Score IS NOT NULL AND {_RULE} AND {_TARGET} AND {_NAMES}
GROUP BY scorer, source
"""
