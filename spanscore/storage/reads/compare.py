"""The sums a version comparison needs, added up in the store: one row per (scorer, version), never raw scores.

A version is any attribute of the run, named at query time (docs/compare.md):
- a column every score has (``service.name``, the agent, the model, the rule and its version, the scorer's);
- an attribute kept with the scores (``collector.runs.version_attributes``: ``service.version`` and the
  prompt attributes by default), read from ``Attributes['version.<name>']``;
- any other span or resource attribute, read from the run's root span in ``otel_traces`` (``raw``: slower,
  limited to the spans still kept, and to MAX_RAW_SCORES scores).

Only spanscore's own ``ok`` scores count (outside labels have no sampling weight). Every value the caller
gives travels as a bound parameter; the one text put into the SQL is a column name from COLUMNS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from spanscore.storage.reads.compare_rollup import ROLLUP_SQL, rollup_key
from spanscore.storage.scores import RUN_COST, RUN_TOKENS, VERSION_PREFIX

COLUMNS = {
    "service.name": "ServiceName",
    "agent.name": "AgentName",
    "gen_ai.agent.name": "AgentName",
    "gen_ai.request.model": "Model",
    "model": "Model",
    "rule": "Rule",
    "rule.version": "RuleVersion",
    "scorer.version": "ScorerVersion",
}
"""Version names answered by a column of ``scores``."""
MAX_GROUPS = 10_000
"""Rows (scorer x version) a comparison returns at most."""
MAX_RAW_SCORES = 2_000_000
"""Scores a comparison by an attribute not kept with the scores looks at, at most (a join with the spans)."""


class Reads(Protocol):
    async def read(self, sql: str, parameters: dict[str, Any]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]: ...


@dataclass(frozen=True, slots=True)
class VersionRow:
    """One scorer's sums for one version, with the run figures shown beside them."""

    scorer: str
    version: str
    n: int
    w: float
    w2: float
    wy: float
    w2y: float
    w2y2: float
    low: float
    high: float
    binary: bool
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    input_tokens: float | None
    output_tokens: float | None
    cost_per_run: float | None = None
    """The average over the scores whose run's cost is known (``run.cost_usd``); None when none is."""
    w4: float | None = None
    """sum(w^4), for the degrees of freedom; None when the roll-up lacks it for some hours (before 0020)."""


_AGGREGATES = f"""
    count() AS n,
    sum(1 / SampleRate) AS w,
    sum(1 / (SampleRate * SampleRate)) AS w2,
    sum(Score / SampleRate) AS wy,
    sum(Score / (SampleRate * SampleRate)) AS w2y,
    sum(Score * Score / (SampleRate * SampleRate)) AS w2y2,
    min(Score) AS low,
    max(Score) AS high,
    countIf(Score NOT IN (0, 1)) = 0 AS binary,
    quantile(0.5)(RunDurationMs) AS p50,
    quantile(0.95)(RunDurationMs) AS p95,
    avgOrNull(toFloat64OrNull(Attributes['{RUN_TOKENS[0]}'])) AS input_tokens,
    avgOrNull(toFloat64OrNull(Attributes['{RUN_TOKENS[1]}'])) AS output_tokens,
    avgOrNull(toFloat64OrNull(Attributes['{RUN_COST}'])) AS cost,
    sum(1 / pow(SampleRate, 4)) AS w4"""

SCORES_WINDOW = """
    FROM scores FINAL
    WHERE Status = 'ok' AND Source = 'spanscore' AND Score IS NOT NULL AND SampleRate > 0
      AND RunTimestamp >= now64(9) - toIntervalSecond({since:UInt32})
      AND (empty({scorers:Array(String)}) OR has({scorers:Array(String)}, Scorer))"""


def version_expression(by: str, kept: bool) -> tuple[str, dict[str, Any]]:
    """The SQL of a run's version and its parameters: a column, a kept attribute, or (kept False) the spans'."""
    if by in COLUMNS:
        return COLUMNS[by], {}
    if kept:
        return "Attributes[{version_key:String}]", {"version_key": VERSION_PREFIX + by}
    return "dictVersion", {"attribute": by}


def compare_sql(by: str, kept: bool) -> tuple[str, dict[str, Any]]:
    """The query behind ``version_sums``; ``by`` reaches the SQL only as a COLUMNS value or a parameter."""
    expression, parameters = version_expression(by, kept)
    if expression != "dictVersion":
        sql = (
            f"SELECT Scorer, {expression} AS Version, {_AGGREGATES} {SCORES_WINDOW}"
            f" AND {expression} != '' GROUP BY Scorer, Version ORDER BY Scorer, Version LIMIT {{groups:UInt32}}"
        )
        return sql, parameters
    spans = (
        "SELECT TraceId, SpanId, if(SpanAttributes[{attribute:String}] != '', SpanAttributes[{attribute:String}],"
        " ResourceAttributes[{attribute:String}]) AS Version FROM otel_traces"
        " WHERE Timestamp >= now64(9) - toIntervalSecond({since:UInt32} + 86400)"
        " AND (mapContains(SpanAttributes, {attribute:String}) OR mapContains(ResourceAttributes, {attribute:String}))"
    )
    scores = (
        "SELECT TraceId, SpanId, Scorer, Score, SampleRate, RunDurationMs, Attributes"
        f" {SCORES_WINDOW} LIMIT {{raw:UInt32}}"
    )
    sql = (
        f"SELECT Scorer, t.Version AS Version, {_AGGREGATES} FROM ({scores}) AS s"
        f" INNER JOIN ({spans}) AS t ON s.TraceId = t.TraceId AND s.SpanId = t.SpanId"
        " WHERE Version != '' GROUP BY Scorer, Version ORDER BY Scorer, Version LIMIT {groups:UInt32}"
    )
    return sql, parameters


KEPT_SQL = (
    "SELECT count() FROM (SELECT 1 FROM scores WHERE RunTimestamp >= now64(9) - toIntervalSecond({since:UInt32})"
    " AND mapContains(Attributes, {version_key:String}) LIMIT 1)"
)


async def version_sums(
    store: Reads, by: str, since_s: int, scorers: Sequence[str] = (), rollup: bool = True
) -> list[VersionRow]:
    """Per scorer and version, the sums of the scores whose run started in the last ``since_s`` seconds.

    A score column or kept attribute is read from the hourly roll-up (whole hours, ``compare_rollup``) when it
    holds that name in the window; otherwise from the scores, and an attribute that no score of the window
    keeps from the spans (``raw``). ``rollup`` False always reads the scores (to check one against the other).
    """
    if rollup:  # one query: no row means the roll-up does not hold this name in the window
        key = rollup_key(by, COLUMNS.get(by))
        _, rows = await store.read(ROLLUP_SQL, {**key, "since": since_s, "scorers": list(scorers),
                                                "groups": MAX_GROUPS})  # fmt: skip
        if rows:
            return [_row(r[:11] + r[12:]) for r in rows]  # r[11] is the latency array p50 and p95 come from
    kept = True
    if by not in COLUMNS:
        _, found = await store.read(KEPT_SQL, {"since": since_s, "version_key": VERSION_PREFIX + by})
        kept = bool(found and found[0][0])
    sql, parameters = compare_sql(by, kept)
    parameters.update(since=since_s, scorers=list(scorers), groups=MAX_GROUPS, raw=MAX_RAW_SCORES)
    _, rows = await store.read(sql, parameters)
    return [_row(r) for r in rows]


def _row(r: tuple[Any, ...]) -> VersionRow:
    return VersionRow(
        str(r[0]), str(r[1]), int(r[2]), float(r[3]), float(r[4]), float(r[5]), float(r[6]), float(r[7]),
        float(r[8]), float(r[9]), bool(r[10]), _float(r[11]), _float(r[12]), _float(r[13]), _float(r[14]),
        _float(r[15]), _float(r[16]),
    )  # fmt: skip


def _float(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return None if number != number else number  # quantile over no rows is nan
