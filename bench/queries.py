"""Query benchmark: the hourly score series of one scorer over 7 days, from the roll-up and from raw rows.

The embedded store is filled by ClickHouse itself, ``INSERT INTO scores SELECT ... FROM numbers(N)``,
so the materialized views fill ``scores_1m`` and ``scores_1h`` exactly as live inserts do (the
bench checks the roll-up's count against the raw rows). The data: 7 days of scores ending now,
eight scorers of uneven volume, three rules with their own sample rates, four services, five
agents, four models, judges with tokens and cost, 10% non-ok statuses. Every value is derived
from ``cityHash64(number, k)``, so a given size always produces the same rows (timestamps move
with the clock).

Timed, through ``ClickHouseStore.query_sync`` (the guarded path of the query API and of
``spanscore report``, with its default limits and JSON output): spanscore's own trend query
(``spanscore report trend --scorer faithfulness --since 7d --by hour``) over
``score_trend_hourly``; the same query without its p50 column (the one column that reads the
roll-up's quantile states); and the same figures computed from ``scores``, with and without
FINAL. The data grows in steps in one store, so each step adds scores over the same 7 days.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import tempfile
import time
from typing import Any

from spanscore.cli.report import trend_sql
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.scores import SCORE_COLUMNS

DATABASE = "spanscore"
SCORER = "faithfulness"
DAY_NS = 86_400 * 10**9
HOUR_NS = 3_600 * 10**9
# (scorer, higher is better, relative volume, the rule that runs it)
SCORERS = (
    ("faithfulness", True, 4, "support-quality"), ("answer_relevancy", True, 4, "support-quality"),
    ("completeness", True, 6, "cheap-checks"), ("keyword_coverage", True, 6, "cheap-checks"),
    ("tool_call_accuracy", True, 3, "cheap-checks"), ("toxicity", False, 3, "nightly-audit"),
    ("hallucination", False, 2, "nightly-audit"), ("bias", False, 2, "nightly-audit"),
)  # fmt: skip
# (rule, sample rate, judge model; code scorers have none)
RULES = (
    ("support-quality", 0.1, "openai/gpt-4o-mini"), ("cheap-checks", 1.0, ""),
    ("nightly-audit", 0.05, "anthropic/claude-3-5-haiku"),
)  # fmt: skip
# (service, its two agents, its main model and the one it sends a fifth of its calls to)
SERVICES = (
    ("support-bot", "triage", "answer", "gpt-4o-mini", "gpt-4o"),
    ("checkout-agent", "planner", "writer", "gpt-4o", "claude-3-5-sonnet"),
    ("research-assistant", "retriever", "writer", "claude-3-5-sonnet", "gpt-4o"),
    ("code-helper", "planner", "answer", "llama-3.1-70b", "gpt-4o-mini"),
)  # fmt: skip
REASONS = (
    "every claim in the answer is supported by the retrieved context",
    "the answer adds a delivery date that no source mentions",
    "two of five statements cannot be traced to the context",
    "the response addresses the question directly and completely",
    "the reply drifts into an unrelated product before answering",
)


def _uniform(k: int) -> str:
    """A deterministic value in [0, 1) for this row, independent for each ``k``."""
    return f"(cityHash64(number, {k}) / 18446744073709551616.)"


def _pick(values: tuple[str, ...] | list[str], k: int) -> str:
    quoted = ", ".join(f"'{value}'" for value in values)
    return f"arrayElement([{quoted}], 1 + cityHash64(number, {k}) % {len(values)})"


def _hex(k: int) -> str:
    return f"lower(hex(cityHash64(number, {k})))"


def seed_sql(offset: int, count: int, end_ns: int) -> str:
    """INSERT ... SELECT of ``count`` scores numbered from ``offset``, spread over the 7 days before ``end_ns``."""
    weighted = [name for name, _, weight, _ in SCORERS for _ in range(weight)]
    lower_is_better = [name for name, higher, _, _ in SCORERS if not higher]
    service = "arrayElement({}, ServiceIndex)".format  # this row's service's value, from a list per service

    def column(index: int) -> list[str]:
        return [entry[index] for entry in SERVICES]

    u6 = _uniform(6)
    span_ns = 7 * DAY_NS - HOUR_NS  # every hour bucket lies inside a "since 7d" window read just after
    columns = {
        "Scorer": _pick(weighted, 1),
        "HigherIsBetter": f"Scorer NOT IN ({', '.join(repr(n) for n in lower_is_better)})",
        "Rule": f"transform(Scorer, {[s[0] for s in SCORERS]}, {[s[3] for s in SCORERS]}, '')",
        "SampleRate": f"transform(Rule, {[r[0] for r in RULES]}, {[r[1] for r in RULES]}, 1.)",
        "JudgeModel": f"transform(Rule, {[r[0] for r in RULES]}, {[r[2] for r in RULES]}, '')",
        "Judged": "JudgeModel != ''",
        "RunTimestamp": f"fromUnixTimestamp64Nano(toInt64({end_ns - span_ns} + cityHash64(number, 3) % {span_ns}))",
        "Timestamp": "RunTimestamp + toIntervalMillisecond(2000 + cityHash64(number, 4) % 8000)",
        "Status": f"multiIf({_uniform(5)} < 0.90, 'ok', {_uniform(5)} < 0.93, 'error', "
        f"{_uniform(5)} < 0.97, 'not_applicable', 'missing_input')",
        # Good answers are common and bad ones rare, whichever way the scale points.
        "Score": f"if(Status = 'ok', round(if(HigherIsBetter, pow({u6}, 0.4), pow({u6}, 3)), 3), NULL)",
        "Label": "multiIf(Score IS NULL, '', (Score >= 0.5) = HigherIsBetter, 'pass', 'fail')",
        "Reason": f"if(Score IS NULL, '', concat('Score ', toString(Score), ': ', {_pick(REASONS, 7)}, '.'))",
        "Error": "if(Status = 'error', 'judge call failed: timeout after 30 s', '')",
        "TraceId": f"concat({_hex(8)}, {_hex(9)})",
        "SpanId": _hex(10),
        "RunId": "concat(TraceId, ':', SpanId)",
        "ScoreId": f"concat({_hex(11)}, {_hex(12)})",
        "ServiceIndex": f"1 + cityHash64(number, 13) % {len(SERVICES)}",
        "ServiceName": service([s[0] for s in SERVICES]),
        "AgentName": f"if({_uniform(14)} < 0.5, {service(column(1))}, {service(column(2))})",
        "Model": f"if({_uniform(15)} < 0.8, {service(column(3))}, {service(column(4))})",
        "SessionId": "concat('session-', toString(cityHash64(number, 16) % 200000))",
        "UserId": "concat('user-', toString(cityHash64(number, 17) % 50000))",
        "ScorerVersion": "'1'",
        "InputTokens": "if(Judged, 300 + cityHash64(number, 19) % 2500, 0)",
        "OutputTokens": "if(Judged, 20 + cityHash64(number, 20) % 300, 0)",
        "CostUsd": "InputTokens * 0.00000015 + OutputTokens * 0.0000006",
        "DurationMs": f"if(Judged, 300 + 3700 * {_uniform(21)}, 0.1 + 5 * {_uniform(21)})",
        "ReadyReason": f"if({_uniform(22)} < 0.9, 'quiet_period', 'max_wait')",
        "RunDurationMs": f"500 + 29500 * pow({_uniform(23)}, 2)",
        "RunError": f"if({_uniform(24)} < 0.02, 'tool call failed', '')",
        "Attributes": "map()",
        "Version": "1",
        "RuleVersion": "'bench'",
        "Source": "'spanscore'",
        "Author": "''",
        "Target": "'run'",
    }
    select = ",\n    ".join(f"{expression} AS {name}" for name, expression in columns.items())
    inserted = ", ".join(SCORE_COLUMNS)
    return (
        f"INSERT INTO {DATABASE}.scores ({inserted})\nSELECT {inserted} FROM (\n  SELECT\n    {select}\n"
        f"  FROM numbers({offset}, {count})\n)"
    )


def raw_sql(scorer: str, final: bool) -> str:
    """The figures of ``trend_sql(scorer, '7d', 'hour')`` computed from raw score rows."""
    weight = "1. / if(SampleRate > 0, SampleRate, 1.)"
    return (
        "SELECT toStartOfHour(RunTimestamp) AS bucket, count(Score) AS scores,"
        " round(sum(Score) / nullIf(count(Score), 0), 4) AS mean,"
        f" round(sum(Score * {weight}) / nullIf(sumIf({weight}, Score IS NOT NULL), 0), 4) AS weighted_mean,"
        " round(quantile(0.5)(Score), 4) AS p50,"
        " round(countIf(Label = 'pass') / nullIf(countIf(Label IN ('pass', 'fail')), 0), 4) AS pass_rate,"
        " round(sum(CostUsd), 6) AS judge_cost_usd"
        f" FROM scores{' FINAL' if final else ''} WHERE Scorer = '{scorer}'"
        " AND toStartOfHour(RunTimestamp) >= now() - INTERVAL 604800 SECOND"
        " GROUP BY bucket ORDER BY bucket"
    )


def _without_p50(sql: str) -> str:
    """The trend query without its p50 column, the one that reads the roll-up's quantile states."""
    return re.sub(r" round\(avg\(P50\), 4\) AS \w+,", "", sql)


QUERIES = {
    "rollup": trend_sql(SCORER, "7d", "hour"),
    "rollup_no_p50": _without_p50(trend_sql(SCORER, "7d", "hour")),
    "raw": raw_sql(SCORER, final=False),
    "raw_final": raw_sql(SCORER, final=True),
}


def _time(store: ClickHouseStore, sql: str, runs: int) -> dict[str, Any]:
    """Wall milliseconds of ``runs`` runs after one warm-up; a run the query limits stop is recorded as such."""
    timings: list[float] = []
    error = ""
    for attempt in range(runs + 1):
        started = time.perf_counter()
        try:
            store.query_sync(sql, "json")
        except Exception as exc:  # a limit (time, memory) is a result here, not a crash
            error = str(exc)[:200]
            break
        if attempt:  # the first run warms caches and is not counted
            timings.append((time.perf_counter() - started) * 1000)
    return {
        "ms": timings,
        "p50_ms": statistics.median(timings) if timings else None,
        "min_ms": min(timings, default=None),
        "max_ms": max(timings, default=None),
        "error": error,
    }


def _tables(store: ClickHouseStore) -> dict[str, dict[str, int]]:
    rows = store.internal_query(
        "SELECT table, sum(rows), sum(bytes_on_disk), count() FROM system.parts"
        " WHERE database = {db:String} AND active AND table IN ('scores', 'scores_1m', 'scores_1h') GROUP BY table",
        {"db": DATABASE},
    )
    tables = {table: {"rows": int(r), "bytes": int(b), "parts": int(p)} for table, r, b, p in rows}
    states = store.internal_query(
        "SELECT sum(column_data_compressed_bytes) FROM system.parts_columns WHERE database = {db:String}"
        " AND table = 'scores_1h' AND column = 'QuantilesState' AND active",
        {"db": DATABASE},
    )
    tables["scores_1h"]["quantile_state_bytes"] = int(states[0][0])
    return tables


def _series_agree(store: ClickHouseStore) -> bool:
    """The roll-up's hourly counts equal the raw rows': the views saw every inserted score."""
    rollup = store.internal_query(f"SELECT bucket, scores FROM ({QUERIES['rollup']})")
    raw = store.internal_query(f"SELECT bucket, scores FROM ({QUERIES['raw']})")
    return bool(rollup) and [(str(b), int(n)) for b, n in rollup] == [(str(b), int(n)) for b, n in raw]


def _step(store: ClickHouseStore, total: int, seed_s: float, runs: int) -> dict[str, Any]:
    scorer_rows = store.internal_query(f"SELECT count() FROM {DATABASE}.scores WHERE Scorer = '{SCORER}'")[0][0]
    return {
        "scores": total,
        "scorer_scores": int(scorer_rows),
        "seed_s": seed_s,
        "tables": _tables(store),
        "agree": _series_agree(store),
        "queries": {name: _time(store, sql, runs) for name, sql in QUERIES.items()},
    }


def query_benchmark(sizes: list[int], runs: int) -> dict[str, Any]:
    """Seed up to each size in turn and time the three queries; finally again with the roll-ups merged."""
    steps: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="spanscore-bench-queries-") as workdir:
        store = ClickHouseStore(f"chdb://{os.path.join(workdir, 'data')}", DATABASE)
        store.open()
        try:
            end_ns = time.time_ns()
            seeded = 0
            for size in sorted(sizes):
                started = time.perf_counter()
                store.client.command(seed_sql(seeded, size - seeded, end_ns))
                seeded = size
                seed_s = time.perf_counter() - started
                print(f"  seeded {size:,} scores ({seed_s:.0f} s for this step), timing", file=sys.stderr, flush=True)
                steps.append(_step(store, size, seed_s, runs))
            for table in ("scores_1h", "scores_1m"):
                store.client.command(f"OPTIMIZE TABLE {DATABASE}.{table} FINAL")
            merged = _step(store, seeded, 0.0, runs)
        finally:
            store.close()
    return {"scorer": SCORER, "runs": runs, "steps": steps, "merged": merged, "sql": QUERIES}
