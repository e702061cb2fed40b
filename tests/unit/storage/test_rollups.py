"""Roll-ups (migration 0004) against the raw scores they summarise, on the embedded engine."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from spanscore.records import SpanRecord
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.connection import connect
from spanscore.storage.schema.catalog import load_migrations
from spanscore.storage.schema.migrations import current_version, migrate
from spanscore.storage.scores import SCORE_COLUMNS, DecisionRow, ScoreRow, score_id, to_columns

HOUR_NS = 3600 * 10**9
BASE_NS = 1_790_000_000 * 10**9  # a fixed instant, so buckets are deterministic
VIEWS = ("score_trend_hourly", "worst_runs", "coverage_daily", "judge_cost_daily", "scores_with_spans")
WEIGHT = "1. / if(SampleRate > 0, SampleRate, 1.)"


def make_scores(count: int, seed: int = 7) -> list[ScoreRow]:
    """A mix of scorers, statuses, sample rates and hours, with a fixed seed."""
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        scorer, higher = rng.choice([("faithfulness", True), ("toxicity", False), ("completeness", True)])
        status = rng.choices(["ok", "error", "not_applicable", "missing_input"], weights=[80, 8, 6, 6])[0]
        score = round(rng.random(), 3) if status == "ok" else None
        passed = score is not None and (score >= 0.5) == higher
        rule = rng.choice(["prod", "beta"])
        trace_id = f"{i:032x}"
        rows.append(
            ScoreRow(
                score_id=score_id(rule, scorer, "1", trace_id, "s1"),
                run_timestamp_ns=BASE_NS + rng.randrange(6 * HOUR_NS),
                trace_id=trace_id, span_id="00000000000000a1", run_id=f"run-{i}",
                service_name=rng.choice(["checkout", "support"]), agent_name=rng.choice(["planner", "helper"]),
                model=rng.choice(["gpt-x", "claude-y"]), session_id="", user_id="", rule=rule, scorer=scorer,
                scorer_version="1", score=score, label=("pass" if passed else "fail") if score is not None else "",
                reason=f"reason {i}", status=status, error="boom" if status == "error" else "",
                sample_rate=rng.choice([1.0, 0.5, 0.1]), higher_is_better=higher,
                judge_model="judge-1" if scorer != "completeness" else "", input_tokens=rng.randrange(500),
                output_tokens=rng.randrange(100), cost_usd=round(rng.random() / 100, 6), duration_ms=12.0,
                ready_reason="root_ended", run_duration_ms=float(rng.randrange(5000)), run_error="",
            )
        )  # fmt: skip
    return rows


def rows_by_key(store: ClickHouseStore, sql: str) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """First three columns are the key (hour, rule, scorer), the rest the values."""
    return {tuple(row[:3]): tuple(row[3:]) for row in store.internal_query(sql)}


def assert_close(actual: dict[Any, tuple[Any, ...]], expected: dict[Any, tuple[Any, ...]]) -> None:
    """Counts equal; floating sums equal up to summation order."""
    assert actual.keys() == expected.keys()
    for key, values in expected.items():
        for have, want in zip(actual[key], values, strict=True):
            if isinstance(want, float) or isinstance(have, float):
                assert have == pytest.approx(want, rel=1e-9, abs=1e-12), key
            else:
                assert have == want, key


MEASURES = (
    "Scores", "Scored", "ScoreSum", "WeightedScoreSum", "WeightSum", "Passed", "Failed", "StatusOk", "NotApplicable",
    "MissingInput", "Errors", "CostUsd", "InputTokens", "OutputTokens",
)  # fmt: skip
RAW = (
    "SELECT toDateTime(toStartOfHour(RunTimestamp)) AS Hour, Rule, Scorer, count(), count(Score), sum(Score),"
    " sum(Score * {weight}), sumIf({weight}, Score IS NOT NULL), countIf(Label = 'pass'), countIf(Label = 'fail'),"
    " countIf(Status = 'ok'), countIf(Status = 'not_applicable'), countIf(Status = 'missing_input'),"
    " countIf(Status = 'error'), sum(CostUsd), sum(InputTokens), sum(OutputTokens)"
    " FROM {db}.scores FINAL GROUP BY Hour, Rule, Scorer"
)


def trend(store: ClickHouseStore) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The hourly trend summed over services, agents and models, to compare with one raw GROUP BY."""
    sums = ", ".join(f"sum({name})" for name in MEASURES)
    return rows_by_key(
        store, f"SELECT Hour, Rule, Scorer, {sums} FROM {store.database}.score_trend_hourly GROUP BY Hour, Rule, Scorer"
    )


def raw(store: ClickHouseStore) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return rows_by_key(store, RAW.format(db=store.database, weight=WEIGHT))


def test_hourly_rollup_equals_the_raw_aggregates(store: ClickHouseStore) -> None:
    store.insert_scores_sync(make_scores(3000))

    expected = raw(store)
    assert len(expected) >= 30  # six hours x two rules x three scorers
    assert_close(trend(store), expected)


def test_quantiles_and_means_per_finest_group(store: ClickHouseStore) -> None:
    store.insert_scores_sync(make_scores(2000, seed=11))
    db = store.database
    keys = "Hour, Rule, Scorer, ServiceName, AgentName, Model, JudgeModel"
    view = store.internal_query(
        f"SELECT {keys}, MeanScore, WeightedMeanScore, PassRate, [P50, P90, P99] FROM {db}.score_trend_hourly"
    )
    exact = store.internal_query(
        f"SELECT toDateTime(toStartOfHour(RunTimestamp)) AS Hour, Rule, Scorer, ServiceName, AgentName, Model,"
        f" JudgeModel, avg(Score), sum(Score * {WEIGHT}) / sumIf({WEIGHT}, Score IS NOT NULL),"
        " countIf(Label = 'pass') / countIf(Label IN ('pass', 'fail')), quantiles(0.5, 0.9, 0.99)(Score)"
        f" FROM {db}.scores FINAL GROUP BY {keys}"
    )
    assert len(view) == len(exact) > 50
    by_key = {row[:7]: row[7:] for row in exact}
    for row in view:
        mean, weighted, pass_rate, quantiles = row[7:]
        want = by_key[row[:7]]
        if want[0] is None or want[0] != want[0]:  # no ok score in the group: mean is NULL or nan
            assert mean is None
            continue
        assert mean == pytest.approx(want[0], rel=1e-9)
        assert weighted == pytest.approx(want[1], rel=1e-9)
        assert pass_rate == pytest.approx(want[2], rel=1e-9)
        assert quantiles == pytest.approx(want[3], abs=1e-9)  # same estimator, every value kept


def test_minute_rollup_sums_to_the_hour(store: ClickHouseStore) -> None:
    store.insert_scores_sync(make_scores(1500, seed=3))
    db = store.database
    per_minute = store.internal_query(
        f"SELECT toStartOfHour(Bucket) AS H, countMerge(ScoresState), sumMerge(CostUsdState),"
        f" countIfMerge(ErrorState) FROM {db}.scores_1m GROUP BY H ORDER BY H"
    )
    per_hour = store.internal_query(
        f"SELECT Bucket AS H, countMerge(ScoresState), sumMerge(CostUsdState), countIfMerge(ErrorState)"
        f" FROM {db}.scores_1h GROUP BY H ORDER BY H"
    )
    assert [r[0] for r in per_minute] == [r[0] for r in per_hour]
    assert [r[1] for r in per_minute] == [r[1] for r in per_hour]
    assert [r[3] for r in per_minute] == [r[3] for r in per_hour]
    assert [r[2] for r in per_minute] == pytest.approx([r[2] for r in per_hour], rel=1e-9)
    minutes = store.internal_query(f"SELECT uniqExact(Bucket) FROM {db}.scores_1m")[0][0]
    assert minutes > 6 * 10  # minute buckets, not hours


def test_rollups_count_inserts_and_final_reads_count_scores(store: ClickHouseStore) -> None:
    rows = make_scores(50)
    store.insert_scores_sync(rows)
    store.insert_scores_sync(rows[:10])  # a replay writes the same ScoreIds again
    db = store.database
    assert store.internal_query(f"SELECT countMerge(ScoresState) FROM {db}.scores_1h")[0][0] == 60
    assert store.internal_query(f"SELECT sum(Scores) FROM {db}.score_trend_hourly")[0][0] == 60
    assert store.internal_query(f"SELECT count() FROM {db}.scores FINAL")[0][0] == 50
    ok = sum(1 for r in rows if r.status == "ok")
    assert store.internal_query(f"SELECT count() FROM {db}.worst_runs")[0][0] == ok


def test_worst_runs_are_oriented_by_direction(store: ClickHouseStore) -> None:
    rows = [r for r in make_scores(300) if r.status == "ok"]
    store.insert_scores_sync(rows)
    db = store.database
    for scorer in ("faithfulness", "toxicity"):
        worst = store.internal_query(
            f"SELECT Score, TraceId, SpanId, Reason FROM {db}.worst_runs WHERE Scorer = {{s:String}}"
            " ORDER BY OrientedScore ASC LIMIT 1",
            {"s": scorer},
        )[0]
        mine = [r for r in rows if r.scorer == scorer]
        target = min(mine, key=lambda r: r.score or 0.0) if scorer == "faithfulness" else None
        if target is None:  # lower is better: the worst run has the highest score
            target = max(mine, key=lambda r: r.score or 0.0)
        assert worst[0] == target.score
        assert worst[1:] == (target.trace_id, target.span_id, target.reason)


def test_coverage_daily_counts_candidates_once_per_run(store: ClickHouseStore) -> None:
    outcomes = ["sampled"] * 30 + ["sampled_out"] * 50 + ["filtered_out"] * 15 + ["over_budget"] * 5
    decisions = [
        DecisionRow(BASE_NS + i * 10**9, f"{i:032x}", "a1", f"run-{i}", "svc", "agent", "prod", outcome, 0.3, "", "")
        for i, outcome in enumerate(outcomes)
    ]
    store.insert_decisions_sync(decisions)
    store.insert_decisions_sync(decisions[:20])  # written twice: FINAL keeps one per run
    row = store.internal_query(
        f"SELECT Candidates, Scored, Coverage, SampledOut, OverBudget, FilteredOut FROM {store.database}.coverage_daily"
    )
    assert row == [(85, 30, pytest.approx(30 / 85), 50, 5, 15)]


def test_judge_cost_daily_and_scores_with_spans(store: ClickHouseStore) -> None:
    rows = make_scores(200)
    store.insert_scores_sync(rows)
    db = store.database
    cost = store.internal_query(f"SELECT sum(CostUsd), sum(Scores) FROM {db}.judge_cost_daily")[0]
    assert cost[0] == pytest.approx(sum(r.cost_usd for r in rows), rel=1e-9)
    assert cost[1] == len(rows)

    first = rows[0]
    span = SpanRecord(
        first.trace_id, first.span_id, "", "agent.run", "Internal", first.run_timestamp_ns,
        first.run_timestamp_ns + 250_000_000, service_name="checkout", status_code="Error", status_message="timeout",
    )  # fmt: skip
    store.insert_spans_sync([span])
    joined = store.internal_query(
        f"SELECT SpanFound, SpanDurationMs, SpanStatusCode, SpanStatusMessage, Scorer FROM {db}.scores_with_spans"
        " WHERE TraceId = {t:String}",
        {"t": first.trace_id},
    )
    assert joined == [(True, pytest.approx(250.0), "Error", "timeout", first.scorer)]
    assert store.internal_query(f"SELECT count(), countIf(SpanFound) FROM {db}.scores_with_spans")[0] == (200, 1)


def test_upgrade_from_version_3_backfills_the_rollups(chdb_dsn: str, database_name: str) -> None:
    client = connect(chdb_dsn, database_name)
    assert migrate(client, database_name, upto=3) == [1, 2, 3]
    assert current_version(client, database_name) == 3
    rows = make_scores(800, seed=5)
    # the columns a version-3 table has (later migrations add RuleVersion, Source, ...)
    existing = {r[0] for r in client.query(f"DESCRIBE TABLE {database_name}.scores").result_rows}
    keep = [index for index, name in enumerate(SCORE_COLUMNS) if name in existing]
    for batch in (rows, rows[:40]):  # the second insert replays 40 scores
        columns = to_columns(batch)
        client.insert(
            f"{database_name}.scores",
            [columns[index] for index in keep],
            column_names=[SCORE_COLUMNS[index] for index in keep],
            column_oriented=True,
        )
    tables = {r[0] for r in client.query(f"SHOW TABLES FROM {database_name}").result_rows}
    assert "scores_1h" not in tables

    store = ClickHouseStore(chdb_dsn, database_name)
    store.open()
    try:
        latest = max(m.version for m in load_migrations(database_name))
        assert current_version(store.client, database_name) == latest >= 4
        assert store.internal_query(f"SELECT count() FROM {database_name}.scores FINAL")[0][0] == 800
        # The backfill reads scores FINAL: history is exact, the replayed copies are not counted.
        assert_close(trend(store), raw(store))
        assert store.internal_query(f"SELECT sum(Scores) FROM {database_name}.score_trend_hourly")[0][0] == 800
        # From the upgrade on, the materialized views keep the roll-ups current.
        store.insert_scores_sync(make_scores(900, seed=6)[800:])
        assert store.internal_query(f"SELECT sum(Scores) FROM {database_name}.score_trend_hourly")[0][0] == 900
        # Running the migrations again is a no-op: nothing is copied twice.
        assert migrate(store.client, database_name) == []
        assert store.internal_query(f"SELECT countMerge(ScoresState) FROM {database_name}.scores_1m")[0][0] == 900
    finally:
        store.close()


def test_every_view_runs_on_an_empty_store(store: ClickHouseStore) -> None:
    for view in VIEWS:
        assert store.internal_query(f"SELECT count() FROM {store.database}.{view}") == [(0,)], view


def with_targets(rows: list[ScoreRow], seed: int = 9) -> list[ScoreRow]:
    """The same scores, each rule scoring one target (the 'beta' rule LLM calls), one row in ten a session."""
    rng = random.Random(seed)
    return [
        dataclasses.replace(row, target="session" if rng.random() < 0.1 else ("llm" if row.rule == "beta" else "run"))
        for row in rows
    ]


RAW_BY_TARGET = (
    "SELECT Target, Rule, Scorer, count(), count(Score), sum(Score), sum(CostUsd)"
    " FROM {db}.scores FINAL GROUP BY Target, Rule, Scorer"
)


def test_rollups_and_views_split_by_target(store: ClickHouseStore) -> None:
    db = store.database
    store.insert_scores_sync(with_targets(make_scores(1200, seed=21)))
    store.insert_decisions_sync(
        [DecisionRow(**{**decision_fields(i), "target": target}) for i, target in enumerate(["llm", "llm", "session"])]
    )
    expected = rows_by_key(store, RAW_BY_TARGET.format(db=db))
    assert {key[0] for key in expected} == {"run", "llm", "session"}
    view = rows_by_key(
        store,
        f"SELECT Target, Rule, Scorer, sum(Scores), sum(Scored), sum(ScoreSum), sum(CostUsd)"
        f" FROM {db}.score_trend_hourly GROUP BY Target, Rule, Scorer",
    )
    assert_close(view, expected)
    minute = store.internal_query(f"SELECT Target, countMerge(ScoresState) FROM {db}.scores_1m GROUP BY Target")
    assert dict(minute) == {t: sum(v[0] for k, v in expected.items() if k[0] == t) for t in ("run", "llm", "session")}
    cost = store.internal_query(f"SELECT Target, sum(Scores) FROM {db}.judge_cost_daily GROUP BY Target ORDER BY 1")
    assert [target for target, _ in cost] == ["llm", "run", "session"]
    assert store.internal_query(f"SELECT DISTINCT Target FROM {db}.worst_runs ORDER BY 1") == [
        ("llm",),
        ("run",),
        ("session",),
    ]
    coverage = store.internal_query(f"SELECT Target, sum(Candidates) FROM {db}.coverage_daily GROUP BY 1 ORDER BY 1")
    assert coverage == [("llm", 2), ("session", 1)]
    assert store.internal_query(f"SELECT count() FROM {db}.scores_with_spans WHERE Target = 'llm'")[0][0] == sum(
        v[0] for k, v in expected.items() if k[0] == "llm"
    )


def decision_fields(index: int) -> dict[str, Any]:
    return {
        "rule": "beta", "trace_id": f"{index:032x}", "run_id": f"run-{index}", "span_id": "00000000000000a1",
        "service_name": "checkout", "agent_name": "planner", "decision": "sampled", "probability": 0.5, "reason": "",
        "ready_reason": "root_ended", "run_timestamp_ns": BASE_NS, "timestamp_ns": BASE_NS,
    }  # fmt: skip


def test_upgrade_to_version_11_reads_earlier_rollups_as_runs(chdb_dsn: str, database_name: str) -> None:
    """Roll-up rows from before the target column count as runs; new scores land under their own target."""
    client = connect(chdb_dsn, database_name)
    assert migrate(client, database_name, upto=10)[-1] == 10
    before = make_scores(600, seed=31)
    columns = to_columns(before)
    target_column = SCORE_COLUMNS.index("Target")
    client.insert(
        f"{database_name}.scores",
        [column for index, column in enumerate(columns) if index != target_column],
        column_names=[name for name in SCORE_COLUMNS if name != "Target"],
        column_oriented=True,
    )
    assert migrate(client, database_name, upto=11) == [11]
    # Version 11 as it ran then, through the client: a store migrates on open and would go on to 18, whose
    # views a rerun of 11 no longer fits (a crashed 11 is rerun before any later migration, never after one).
    db = database_name

    def insert(rows: list[Any]) -> None:
        client.insert(f"{db}.scores", to_columns(rows), column_names=list(SCORE_COLUMNS), column_oriented=True)

    def totals() -> dict[str, int]:
        rows = client.query(f"SELECT Target, sum(Scores) FROM {db}.score_trend_hourly GROUP BY 1").result_rows
        return {str(target): int(count) for target, count in rows}

    raw_rows = [r[0] for r in client.query(f"SELECT Target FROM {db}.scores_1h").result_rows]
    assert set(raw_rows) == {""}  # rolled up before migration 11
    insert([dataclasses.replace(row, target="llm") for row in make_scores(900, seed=32)[600:]])
    assert totals() == {"run": 600, "llm": 300}
    # The migration's statements again (as after a crash before its record): nothing counted twice.
    eleven = next(m for m in load_migrations(db) if m.version == 11)
    for statement in eleven.statements:
        client.command(statement)
    insert([dataclasses.replace(row, target="tool") for row in make_scores(950, seed=33)[900:]])
    assert totals() == {"run": 600, "llm": 300, "tool": 50}
