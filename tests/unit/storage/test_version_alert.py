"""The version alert (#41): "the newest service.version is worse than the previous one on scorer X" fires by the
alerts' own rule (the whole interval of newest minus previous below ``below:``), over stored scores.
"""

from __future__ import annotations

import functools
import random
import time
from dataclasses import replace

import pytest

from spanscore.alerting.config import AlertConfig, AlertingConfig
from spanscore.alerting.evaluator import AlertEvaluator
from spanscore.alerting.notify import Notifier
from spanscore.alerting.version_alert import newest_against_previous
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.alerts import window_scores
from spanscore.storage.reads.version_window import version_window
from spanscore.storage.scores import ScoreRow, score_id

SETTINGS = AlertingConfig(backoff_s=0.01)
MINUTE_NS = 60 * 10**9


def _rows(scorer: str, newest_rate: float) -> list[ScoreRow]:
    """1.4.0 runs 40-20 minutes ago passing 80 %; 1.5.0 runs from 15 minutes ago passing ``newest_rate``."""
    rng = random.Random(2)
    rows = []
    for index in range(800):
        newest = index % 2 == 1
        version, rate, minutes_ago = (
            ("1.5.0", newest_rate, 1 + index % 14) if newest else ("1.4.0", 0.8, 20 + index % 20)
        )
        trace_id = f"{index:032x}"
        rows.append(ScoreRow(
            score_id=score_id("r", scorer, "1", trace_id, "s" * 16),
            run_timestamp_ns=time.time_ns() - minutes_ago * MINUTE_NS, trace_id=trace_id, span_id="s" * 16,
            run_id="s" * 16, service_name="svc", agent_name="a", model="m", session_id="", user_id="", rule="r",
            scorer=scorer, scorer_version="1", score=float(rng.random() < rate), label="", reason="", status="ok",
            error="", sample_rate=0.5 if newest else 1.0, higher_is_better=True, judge_model="j", input_tokens=0,
            output_tokens=0, cost_usd=0.0, duration_ms=1.0, ready_reason="quiet_period", run_duration_ms=1.0,
            run_error="", attributes={"version.service.version": version},
        ))  # fmt: skip
    return rows


def _alert(scorer: str) -> AlertConfig:
    return AlertConfig.model_validate(
        {
            "name": f"newest-{scorer}",
            "scorer": scorer,
            "aggregate": "version_diff",
            "versions": "service.version",
            "window": "1h",
            "below": 0.0,
        }  # fmt: skip
    )


async def test_newest_version_worse_than_the_previous_fires_and_an_equal_one_does_not(store: ClickHouseStore) -> None:
    store.insert_scores_sync(_rows("worse", 0.6) + _rows("same", 0.8))
    read = functools.partial(window_scores, store)
    alerts = [_alert("worse"), _alert("same")]
    evaluator = AlertEvaluator(alerts, SETTINGS, read, Notifier(SETTINGS))
    worse, same = [await evaluator.evaluate(alert) for alert in alerts]
    assert worse.status == "firing", worse
    assert worse.value is not None and worse.high is not None and worse.value < worse.high < 0
    assert same.status == "ok", same
    assert same.low is not None and same.high is not None and same.low < 0 < same.high


async def test_one_version_in_the_window_is_insufficient_data(store: ClickHouseStore) -> None:
    store.insert_scores_sync([r for r in _rows("one", 0.6) if r.attributes["version.service.version"] == "1.4.0"])
    evaluator = AlertEvaluator([_alert("one")], SETTINGS, functools.partial(window_scores, store), Notifier(SETTINGS))
    state = await evaluator.evaluate(_alert("one"))
    assert state.status == "insufficient_data" and state.value is None


def _spread_rows(scorer: str) -> list[ScoreRow]:
    """Three versions over the last three hours, so a 2h window cuts one hour and holds whole ones."""
    rng = random.Random(9)
    rows = []
    for index in range(900):
        version, minutes_ago, rate = [("1.3.0", 130 + index % 40, 0.5), ("1.4.0", 61 + index % 60, 1.0),
                                      ("1.5.0", 1 + index % 55, 0.25)][index % 3]  # fmt: skip
        trace_id = f"{index:032x}"
        row = _rows(scorer, 0.7)[0]
        rows.append(replace(row, score_id=score_id("r", scorer, "1", trace_id, "s" * 16), trace_id=trace_id,
                            run_timestamp_ns=time.time_ns() - minutes_ago * MINUTE_NS, score=rng.random(),
                            sample_rate=rate, attributes={"version.service.version": version}))  # fmt: skip
    return rows


async def test_the_alert_reads_the_roll_up_when_its_filter_is_a_roll_up_key(store: ClickHouseStore) -> None:
    # the scores gone, the hourly roll-up still holds their sums: an alert over whole hours answers from it
    store.insert_scores_sync(_rows("worse", 0.6))
    store.internal_query("TRUNCATE TABLE scores")
    read = functools.partial(window_scores, store)
    alert = _alert("worse").model_copy(update={"window": "3h", "where": {"rule": "r"}})
    state = await AlertEvaluator([alert], SETTINGS, read, Notifier(SETTINGS)).evaluate(alert)
    assert state.status == "firing", state
    # a filter the roll-up is not keyed by reads the scores, here none left
    by_model = alert.model_copy(update={"name": "by-model", "where": {"model": "m"}})
    state = await AlertEvaluator([by_model], SETTINGS, read, Notifier(SETTINGS)).evaluate(by_model)
    assert state.status == "insufficient_data" and state.value is None


@pytest.mark.parametrize("window_s", [2 * 3600, 3 * 3600 + 1234])
def test_roll_up_and_scores_give_the_same_answer(store: ClickHouseStore, window_s: int) -> None:
    store.insert_scores_sync(_spread_rows("tone"))
    both = [version_window(store, "tone", {"Rule": "r"}, window_s, "service.version", rollup=r) for r in (True, False)]
    rolled, raw = both
    assert [r[0] for r in rolled] == [r[0] for r in raw] and len(raw) >= 2
    for got, want in zip(rolled, raw, strict=True):
        assert got[2] == want[2] and got[8] == want[8]  # n, scores not 0 or 1
        assert got[3:8] == pytest.approx(want[3:8], rel=1e-12) and got[9:] == pytest.approx(want[9:])
    assert sorted(rolled, key=lambda r: r[1]) == sorted(rolled, key=lambda r: [w[1] for w in raw if w[0] == r[0]])
    answers = [newest_against_previous(rows, 0.95) for rows in both]
    assert answers[0].samples == answers[1].samples
    assert (answers[0].value, answers[0].low, answers[0].high) == pytest.approx(
        (answers[1].value, answers[1].low, answers[1].high), rel=1e-9
    )
