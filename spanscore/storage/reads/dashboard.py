"""The fixed reads behind the built-in dashboard (``spanscore.server.dashboard``).

Each function runs one SQL statement: the windowed ones (scorers, trend, coverage, judge cost)
are in ``spanscore.storage.reads.dashboard_series``; the worst runs read the ``worst_runs`` view of
migration 0011, and one run or session reads ``otel_traces``, ``scores FINAL``, ``score_decisions
FINAL`` and ``scored_runs FINAL``. Every window starts at the hour ``since`` falls in, as the
hourly roll-ups do. Values from a request (window, scorer, rule, trace
id, limits) travel only as bound parameters; an empty scorer, rule or target
means "all". ``ClickHouseStore.read`` runs them like user queries: read-only, under
the query limits, on the query connection, off the event loop. Rows come back
as dicts of JSON-safe values: NaN and infinities (an empty mean) become
``None``, times are Unix seconds or milliseconds so the browser never parses
server time zones.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.dashboard_minutes import COST_MINUTES_SQL, COVERAGE_MINUTES_SQL, TREND_MINUTES_SQL
from spanscore.storage.reads.dashboard_series import (
    COST_SQL,
    COVERAGE_SQL,
    NAME_TOTALS_SQL,
    SCORERS_SQL,
    TOP_NAMES,
    TREND_SQL,
    VALUE_RANGES_SQL,
)
from spanscore.storage.reads.score_errors import SCORER_ERRORS_SQL
from spanscore.storage.scored_runs import parse_stored_run

REASON_CHARS = 400
"""Reasons in the worst-runs list are cut to this many characters; the run page shows them whole."""
ATTRIBUTE_CHARS = 2000
"""Span attribute values on the run page are cut to this many characters (prompts can be huge)."""

_WINDOW = "toStartOfHour(now() - toIntervalSecond({since:UInt32}))"
_RULE_AND_TARGET = "({rule:String} = '' OR Rule = {rule:String}) AND ({target:String} = '' OR Target = {target:String})"
_FILTERS = f"({{scorer:String}} = '' OR Scorer = {{scorer:String}}) AND {_RULE_AND_TARGET}"

WORST_SQL = f"""
SELECT toUnixTimestamp64Milli(RunTimestamp) AS run_time_ms,
       Rule AS rule, Target AS target, Scorer AS scorer, Score AS score, HigherIsBetter AS higher_is_better,
       Label AS label, leftUTF8(Reason, {REASON_CHARS}) AS reason, lengthUTF8(Reason) > {REASON_CHARS} AS reason_cut,
       TraceId AS trace_id, SpanId AS span_id, RunId AS run_id,
       ServiceName AS service_name, AgentName AS agent_name, Model AS model,
       RunDurationMs AS run_duration_ms, RunError AS run_error
FROM worst_runs
WHERE RunTimestamp >= {_WINDOW} AND {_FILTERS}
ORDER BY OrientedScore ASC, RunTimestamp DESC, TraceId
LIMIT {{limit:UInt32}}
"""

RUN_SPANS_SQL = f"""
SELECT SpanId AS span_id, ParentSpanId AS parent_span_id, SpanName AS name, SpanKind AS kind,
       ServiceName AS service_name, toUnixTimestamp64Milli(Timestamp) AS start_ms, Duration / 1e6 AS duration_ms,
       StatusCode AS status_code, StatusMessage AS status_message,
       mapApply((key, value) -> (key, leftUTF8(value, {ATTRIBUTE_CHARS})), SpanAttributes) AS attributes
FROM otel_traces
WHERE TraceId = {{trace_id:String}}
ORDER BY Timestamp, SpanId
LIMIT {{limit:UInt32}}
"""

RUN_SCORES_SQL = """
SELECT toUnixTimestamp64Milli(RunTimestamp) AS run_time_ms, Rule AS rule, Scorer AS scorer,
       ScorerVersion AS scorer_version, Score AS score, HigherIsBetter AS higher_is_better, Label AS label,
       Status AS status, Reason AS reason, Error AS error, SpanId AS span_id, RunId AS run_id,
       SampleRate AS sample_rate, JudgeModel AS judge_model, CostUsd AS cost_usd,
       InputTokens AS input_tokens, OutputTokens AS output_tokens, Target AS target, SessionId AS session_id,
       Attributes['pending_span'] != '' AS waiting_for_trace, Attributes['never_resolved'] != '' AS never_resolved,
       Attributes['context.source'] AS context_source,
       Attributes['judge.sent'] AS judge_sent, Attributes['judge.redactions'] AS judge_redactions
FROM scores FINAL
WHERE TraceId = {trace_id:String}
ORDER BY Scorer, Rule, SpanId
"""

RUN_DECISIONS_SQL = """
SELECT Rule AS rule, Decision AS decision, Probability AS probability, Reason AS reason,
       RunId AS run_id, SpanId AS span_id, Target AS target
FROM score_decisions FINAL
WHERE TraceId = {trace_id:String}
ORDER BY Rule, RunId
"""


NEWEST_RUN_ROWS = (
    "SELECT * FROM scored_runs FINAL WHERE {where} ORDER BY Version DESC LIMIT 1 BY TraceId, RunId, ServiceName"
)
"""One row per scored run and service: rows stored before migration 0012 (RunService '') and a rescore stored
after it are two rows of one run; the newest wins."""

SESSION_TURNS_SQL = (
    """
SELECT RunId AS run_id, TraceId AS trace_id, SpanId AS span_id, Run AS run
FROM ("""
    + NEWEST_RUN_ROWS.format(where="SessionId = {session_id:String} AND Target = 'run'")
    + """)
ORDER BY RunTimestamp, RunId
LIMIT {limit:UInt32}
"""
)

SESSION_SCORES_SQL = """
SELECT Target AS target, Rule AS rule, Scorer AS scorer, Score AS score, HigherIsBetter AS higher_is_better,
       Label AS label, Status AS status, Reason AS reason, Error AS error, TraceId AS trace_id, SpanId AS span_id,
       RunId AS run_id, if(Target IN ('llm', 'tool', 'retrieval'), Attributes['run.id'], RunId) AS turn_run_id,
       ReadyReason AS ready_reason
FROM scores FINAL
WHERE SessionId = {session_id:String}
ORDER BY Target, Rule, Scorer, RunTimestamp
LIMIT {limit:UInt32}
"""


class DashboardReader:
    """Runs the dashboard's statements against one open store."""

    def __init__(self, store: ClickHouseStore) -> None:
        self._store = store

    # An empty rule, target or scorer means all of them.

    async def scorers(
        self, since_s: int, *, rule: str = "", target: str = "", limit: int = TOP_NAMES
    ) -> tuple[list[dict[str, Any]], dict[str, int] | None]:
        """The ``limit`` most scored names of the window in name order, and what the rest add up to (None: none)."""
        rows = await self._rows(SCORERS_SQL, since=since_s, rule=rule, target=target, limit=limit)
        # The roll-up counts every error ever inserted; the errors standing now are in scores FINAL.
        errors = await self._rows(SCORER_ERRORS_SQL, since=since_s, rule=rule, target=target)
        standing = {row["scorer"]: row["errors"] for row in errors}
        for row in rows:
            if row["source"] == "":
                row["errors"] = standing.get(row["scorer"], 0)
        rows.sort(key=lambda row: (row["scorer"], row["source"]))
        if len(rows) < limit:
            return rows, None
        [totals] = await self._rows(NAME_TOTALS_SQL, since=since_s, rule=rule, target=target)
        others = {
            "names": int(totals["names"]) - len(rows),
            "scored": int(totals["scored"]) - sum(r["scored"] for r in rows),
        }
        return rows, (others if others["names"] > 0 else None)

    async def value_ranges(
        self, since_s: int, *, rule: str = "", target: str = "", names: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """The lowest and highest value of each name (``scorer``, ``source``), to tell its scale."""
        return await self._rows(VALUE_RANGES_SQL, since=since_s, rule=rule, target=target, names=list(names))

    async def trend(
        self,
        since_s: int,
        *,
        scorer: str = "",
        rule: str = "",
        target: str = "",
        daily: bool = False,
        minutes: bool = False,
    ) -> list[dict[str, Any]]:
        """One point per bucket and name: the chosen scorer's, or the window's most scored names' (``TOP_NAMES``)."""
        names: list[str] = []
        if not scorer:
            names = sorted({row["scorer"] for row in (await self.scorers(since_s, rule=rule, target=target))[0]})
            if not names:
                return []
        return await self._rows(
            TREND_MINUTES_SQL if minutes else TREND_SQL,
            since=since_s, scorer=scorer, rule=rule, target=target, daily=daily, names=names,
        )  # fmt: skip

    async def worst_runs(
        self, since_s: int, *, scorer: str = "", rule: str = "", target: str = "", limit: int = 20
    ) -> list[dict[str, Any]]:
        return await self._rows(WORST_SQL, since=since_s, scorer=scorer, rule=rule, target=target, limit=limit)

    async def coverage(
        self, since_s: int, *, rule: str = "", target: str = "", daily: bool = False, minutes: bool = False
    ) -> list[dict[str, Any]]:
        sql = COVERAGE_MINUTES_SQL if minutes else COVERAGE_SQL
        return await self._rows(sql, since=since_s, rule=rule, target=target, daily=daily)

    async def judge_cost(
        self,
        since_s: int,
        *,
        scorer: str = "",
        rule: str = "",
        target: str = "",
        daily: bool = False,
        minutes: bool = False,
    ) -> list[dict[str, Any]]:
        sql = COST_MINUTES_SQL if minutes else COST_SQL
        return await self._rows(sql, since=since_s, scorer=scorer, rule=rule, target=target, daily=daily)

    async def run(self, trace_id: str, max_spans: int = 1000) -> dict[str, Any]:
        """Spans, scores and decisions of one trace; ``spans_cut`` says the span list hit ``max_spans``."""
        spans = await self._rows(RUN_SPANS_SQL, trace_id=trace_id, limit=max_spans + 1)
        scores = await self._rows(RUN_SCORES_SQL, trace_id=trace_id)
        decisions = await self._rows(RUN_DECISIONS_SQL, trace_id=trace_id)
        runs = await scored_runs(self._store, trace_id)
        return {
            "trace_id": trace_id,
            "spans": spans[:max_spans],
            "spans_cut": len(spans) > max_spans,
            "scores": scores,
            "decisions": decisions,
            "scored_runs": runs,
        }

    async def session(self, session_id: str, max_turns: int = 1000) -> dict[str, Any]:
        """One conversation: its stored turns in order with their run's and spans' scores, and its own scores.

        Turns are stored for every run of a session when a session rule exists, else only for runs that were scored.
        """
        turns = await self._rows(SESSION_TURNS_SQL, session_id=session_id, limit=max_turns + 1)
        scores = await self._rows(SESSION_SCORES_SQL, session_id=session_id, limit=10_000)
        by_run: dict[str, list[dict[str, Any]]] = {}
        for score in scores:
            if score["target"] != "session":
                by_run.setdefault(score["turn_run_id"], []).append(score)
        out = []
        for row in turns[:max_turns]:
            view = parse_stored_run(str(row["run"]))
            out.append({
                "run_id": row["run_id"], "trace_id": row["trace_id"], "span_id": row["span_id"],
                "start_ms": int(view.get("start_time_ns") or 0) // 1_000_000,
                "input": view.get("input"), "output": view.get("output"), "tool_calls": view.get("tool_calls"),
                "scores": by_run.get(row["run_id"], []),
            })  # fmt: skip
        return {
            "session_id": session_id,
            "turns": out,
            "turns_cut": len(turns) > max_turns,
            "scores": [score for score in scores if score["target"] == "session"],
        }

    async def _rows(self, sql: str, **parameters: Any) -> list[dict[str, Any]]:
        """The statement's rows as JSON-safe dicts, converted on a worker thread (not the event loop)."""
        columns, rows = await self._store.read(sql, parameters)
        return await asyncio.to_thread(json_rows, columns, rows)


def json_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows as dicts whose values ``json.dumps(allow_nan=False)`` accepts."""
    return [{name: _json_value(value) for name, value in zip(columns, row, strict=True)} for row in rows]


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(key): _json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(item) for item in value]
    return value


RUN_VIEWS_SQL = (
    "SELECT RunId AS run_id, SpanId AS span_id, Run AS run FROM ("
    + NEWEST_RUN_ROWS.format(where="TraceId = {trace_id:String}")
    + ") ORDER BY RunTimestamp, RunId, ServiceName"
)


async def scored_runs(store: ClickHouseStore, trace_id: str) -> list[dict[str, Any]]:
    """What the scorers received for each scored run of one trace (``spanscore.storage.scored_runs``)."""
    _, rows = await store.read(RUN_VIEWS_SQL, {"trace_id": trace_id})
    return [parse_stored_run(str(row[2])) for row in rows]
