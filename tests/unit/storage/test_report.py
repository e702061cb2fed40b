"""`spanscore report trend` over seeded scores: values equal the raw aggregates, arguments are checked."""

from __future__ import annotations

import json
import time

import pytest

from spanscore.cli.report import sparkline, trend, trend_sql
from spanscore.errors import ConfigError
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.scores import ScoreRow, score_id

HOUR_NS = 3600 * 10**9


def _row(index: int, hours_ago: int, score: float, sample_rate: float) -> ScoreRow:
    trace_id = f"{index:032x}"
    return ScoreRow(
        score_id=score_id("r", "faithfulness", "1", trace_id, "s"),
        run_timestamp_ns=time.time_ns() - hours_ago * HOUR_NS,
        trace_id=trace_id, span_id="s", run_id=trace_id, service_name="svc", agent_name="a", model="m", session_id="",
        user_id="", rule="r", scorer="faithfulness", scorer_version="1", score=score,
        label="pass" if score >= 0.5 else "fail", reason="", status="ok", error="", sample_rate=sample_rate,
        higher_is_better=True, judge_model="j", input_tokens=10, output_tokens=5, cost_usd=0.001, duration_ms=1.0,
        ready_reason="quiet_period", run_duration_ms=10.0, run_error="",
    )  # fmt: skip


def test_trend_equals_raw_aggregates(store: ClickHouseStore) -> None:
    rows = [_row(i, hours_ago=i % 3 + 1, score=(i % 10) / 10, sample_rate=0.5 if i % 2 else 1.0) for i in range(60)]
    store.insert_scores_sync(rows)
    data = json.loads(trend(store.query_sync, "faithfulness", "1d", "hour", "json"))
    assert len(data) == 3
    assert sum(int(b["scores"]) for b in data) == 60
    overall_mean = sum(r.score for r in rows if r.score is not None) / 60
    bucket_means = sum(float(b["mean"]) * int(b["scores"]) for b in data) / 60
    assert bucket_means == pytest.approx(overall_mean, abs=1e-3)
    for bucket in data:  # weighted mean differs from the plain one where sample rates differ
        assert 0 <= float(bucket["weighted_mean"]) <= 1
    table = trend(store.query_sync, "faithfulness", "1d", "hour", "table")
    assert table.startswith("faithfulness over 1d by hour: 3 bucket(s)")
    assert "(3 rows)" in table
    assert trend(store.query_sync, "faithfulness", "1d", "day", "csv").count("\n") >= 2


@pytest.mark.parametrize(
    ("scorer", "since", "by"),
    [("x' OR 1=1 --", "7d", "hour"), ("faithfulness", "7 days", "hour"), ("faithfulness", "7d", "month")],
)
def test_bad_arguments_never_reach_sql(scorer: str, since: str, by: str) -> None:
    with pytest.raises(ConfigError):
        trend_sql(scorer, since, by)


def test_sparkline_orders_values() -> None:
    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█"
    assert sparkline([None, 1.0]) == " ▁"
    assert sparkline([]) == ""


def test_unknown_scorer_lists_the_scorers_with_data(store: ClickHouseStore) -> None:
    store.insert_scores_sync([_row(1, hours_ago=1, score=0.5, sample_rate=1.0)])
    with pytest.raises(ConfigError, match=r"no scores for scorer 'faithfullness'.*scorers with data: faithfulness"):
        trend(store.query_sync, "faithfullness", "1d", "hour", "table")


def test_a_pass_fail_scorer_has_a_median_of_zero_or_one(store: ClickHouseStore) -> None:
    """Issue #40 item 10: the column was the mean of the hours' medians (0.6667 for a 0/1 scorer over a day).

    An hour of ten 0s and two hours of fifteen 1s: however UTC midnight cuts the three hours into days, no day
    holds as many 0s as 1s (a tie's median is 0.5 in any definition that interpolates: a CI run at 02:12 UTC
    put ten 0s and ten 1s into one day when each hour had ten scores)."""
    hours = [1] * 10 + [2] * 15 + [3] * 15
    rows = [_row(i, hours_ago=hour, score=float(hour != 1), sample_rate=1.0) for i, hour in enumerate(hours)]
    store.insert_scores_sync(rows)
    data = json.loads(trend(store.query_sync, "faithfulness", "1d", "day", "json"))
    assert {float(bucket["p50"]) for bucket in data} <= {0.0, 1.0}
    assert "p50_of_buckets" not in data[0]
