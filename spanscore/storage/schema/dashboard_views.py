"""The views behind the dashboards, written once for migration 0004 and again, split by target, for 0011.

Migration 0004 creates them (``{dashboard_views}``); 0011 replaces each with the same view grouped by
target as well (``{dashboard_target_views}``), so a rule that scores LLM calls or sessions is told from
the run rules. Only the target column, the create verb and how the roll-up readers read an unset target
differ, so each view is declared here once; the note above each statement says what it holds, as shipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable

TREND_MEASURES = """\
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
    sumMerge(OutputTokensState) AS OutputTokens"""

COVERAGE_COUNTS = (
    ("Candidates", "Decision != 'filtered_out'"),
    ("Scored", "Decision IN ('sampled', 'duplicate')"),
    ("SampledOut", "Decision = 'sampled_out'"),
    ("OverBudget", "Decision = 'over_budget'"),
    ("MissingInput", "Decision = 'missing_input'"),
    ("NotApplicable", "Decision = 'not_applicable'"),
    ("Failed", "Decision = 'failed'"),
    ("FilteredOut", "Decision = 'filtered_out'"),
)
"""Decisions counted per rule and period: the coverage view's and the dashboard's coverage read."""


def snake(name: str) -> str:
    """``SampledOut`` -> ``sampled_out``: the dashboard's JSON names for the view's columns."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def coverage_measures(name: Callable[[str], str] = str, indent: str = "    ") -> str:
    """The coverage counts and the coverage share, one per line, named as the view names them or by ``name``."""
    counts = [f"countIf({condition}) AS {name(column)}" for column, condition in COVERAGE_COUNTS]
    share = f"{name('Scored')} / nullIf({name('Candidates')}, 0) AS {name('Coverage')}"
    return f",\n{indent}".join([*counts[:2], share, *counts[2:]])


_NOTES = {
    False: (
        (
            "-- Hourly trend per rule, scorer, service, agent and model (and judge model), finalized.\n"
            "-- MeanScore is over ok scores; WeightedMeanScore weights each by 1 / SampleRate, which is\n"
            "-- the estimate for all runs the rule covers. PassRate is over labelled scores. Counts are\n"
            "-- inserts (see above); re-aggregate with the sums when grouping more coarsely, never by\n"
            "-- averaging these means.\n"
        ),
        (
            "-- Every ok score, exact (scores FINAL), with what a reader needs to open the run.\n"
            "-- OrientedScore is Score when higher is better and -Score otherwise, so\n"
            "-- ORDER BY OrientedScore ASC lists the worst runs first whatever the scorer's direction.\n"
        ),
        (
            "-- Coverage per rule and day from the decisions (score_decisions FINAL: one decision per\n"
            "-- rule and run). Candidates are runs inside the rule's population (every decision but\n"
            "-- filtered_out); Scored are runs the rule sampled (sampled, or duplicate: sampled before).\n"
        ),
        (
            "-- Judge spend per day, rule, scorer and judge model, from the hourly roll-up (inserts,\n"
            "-- so a replayed judge call that was really made again is counted again, as it was paid).\n"
        ),
        (
            "-- Each score next to its scored span: latency and error status as the span recorded them.\n"
            "-- A LEFT join keeps scores whose spans are gone (span TTL shorter than score TTL);\n"
            "-- ANY takes one copy of a span that was stored twice.\n"
        ),
    ),
    True: (
        ("-- Hourly trend per rule, target, scorer, service, agent and model (and judge model), as in 0004.\n"),
        ("-- Every ok score, exact, as in 0004, with its target and session.\n"),
        (
            "-- Coverage per rule, target and day, as in 0004. For a span target a candidate is a span\n"
            "-- (an LLM call, a tool call, a retrieval), for a session target a session.\n"
        ),
        ("-- Judge spend per day, rule, target, scorer and judge model, as in 0004.\n"),
        ("-- Each score next to its scored span, as in 0004, with its target.\n"),
    ),
}
"""The comment above each view in its migration, part of the statement as shipped (its fingerprint)."""


def _views(target: bool) -> list[str]:
    create = "CREATE OR REPLACE VIEW" if target else "CREATE VIEW IF NOT EXISTS"
    t = "Target, " if target else ""
    hourly = (
        "(SELECT * REPLACE (if(Target = '', 'run', Target) AS Target) FROM {database}.scores_1h)"
        if target
        else "{database}.scores_1h"
    )
    trend_keys = f"Rule, {t}Scorer, ServiceName, AgentName, Model, JudgeModel"
    cost_keys = f"Rule, {t}Scorer, JudgeModel"
    return [
        f"{create} {{database}}.score_trend_hourly AS\nSELECT\n    Bucket AS Hour,\n    {trend_keys},\n"
        f"{TREND_MEASURES}\nFROM {hourly}\nGROUP BY Hour, {trend_keys}",
        f"{create} {{database}}.worst_runs AS\nSELECT\n    RunTimestamp,\n"
        f"    Rule, {t}Scorer, ScorerVersion, ServiceName, AgentName, Model,\n    Score,\n    HigherIsBetter,\n"
        "    if(HigherIsBetter, Score, -Score) AS OrientedScore,\n    Label,\n    Reason,\n    TraceId,\n"
        "    SpanId,\n    RunId,\n    SessionId,\n    UserId,\n    RunDurationMs,\n    RunError\n"
        "FROM {database}.scores FINAL\nWHERE Status = 'ok' AND Score IS NOT NULL",
        f"{create} {{database}}.coverage_daily AS\nSELECT\n    toDate(RunTimestamp) AS Day,\n    Rule,\n"
        + ("    Target,\n" if target else "")
        + f"    {coverage_measures()}\nFROM {{database}}.score_decisions FINAL\n"
        + f"GROUP BY Day, Rule{', Target' if target else ''}",
        f"{create} {{database}}.judge_cost_daily AS\nSELECT\n    toDate(Bucket) AS Day,\n    {cost_keys},\n"
        "    countMerge(ScoresState) AS Scores,\n    sumMerge(CostUsdState) AS CostUsd,\n"
        "    sumMerge(InputTokensState) AS InputTokens,\n    sumMerge(OutputTokensState) AS OutputTokens,\n"
        f"    CostUsd / nullIf(Scores, 0) AS CostUsdPerScore\nFROM {hourly}\nGROUP BY Day, {cost_keys}",
        f"{create} {{database}}.scores_with_spans AS\nSELECT\n    s.RunTimestamp AS RunTimestamp,\n"
        "    s.Rule AS Rule,\n"
        + ("    s.Target AS Target,\n" if target else "")
        + "".join(
            f"    s.{column} AS {column},\n"
            for column in (
                "Scorer",
                "ServiceName",
                "AgentName",
                "Model",
                "Score",
                "Label",
                "Status",
                "HigherIsBetter",
                "TraceId",
                "SpanId",
                "RunId",
                "RunDurationMs",
                "RunError",
            )
        )  # fmt: skip
        + "    t.SpanName AS SpanName,\n    if(t.SpanId != '', t.Duration / 1e6, NULL) AS SpanDurationMs,\n"
        "    t.StatusCode AS SpanStatusCode,\n    t.StatusMessage AS SpanStatusMessage,\n"
        "    t.SpanId != '' AS SpanFound\nFROM {database}.scores AS s FINAL\n"
        "ANY LEFT JOIN {database}.otel_traces AS t ON s.TraceId = t.TraceId AND s.SpanId = t.SpanId",
    ]


def _statements(target: bool) -> str:
    return ";\n\n".join(note + view for note, view in zip(_NOTES[target], _views(target), strict=True))


FRAGMENTS = {"dashboard_views": _statements(target=False), "dashboard_target_views": _statements(target=True)}
