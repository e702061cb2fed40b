"""What the compare page shows beside the table: each version's hourly mean per scorer, and its worst runs.

The series comes from the roll-up (``scores_versions_1h``) when it holds the version name, else from the
scores; the worst runs always from ``scores FINAL`` (a top-N per scorer and version, ``WORST_PER_VERSION``
each, so the answer is bounded though the scan grows with the window). An attribute that is neither kept
with the scores nor a score column gets no series and no worst runs (its versions live in the spans only).

Runs on the same input: among the newest ``PAIR_SCAN_RUNS`` scored runs of the window (``scored_runs``, the
input as the scorers received it), the inputs that runs of at least two versions had, ``MAX_INPUTS`` at most,
each with ``RUNS_PER_INPUT`` of its runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanscore.storage.reads.compare import COLUMNS, MAX_GROUPS, SCORES_WINDOW, Reads, version_expression
from spanscore.storage.reads.compare_rollup import rollup_key
from spanscore.storage.schema.version_rollup import TABLE

WORST_PER_VERSION = 5
PAIR_SCAN_RUNS = 20_000
"""Inputs are matched among this many scored runs at most: the newest of the window (a top-N read)."""
MAX_INPUTS = 20
RUNS_PER_INPUT = 10
MAX_POINTS = 50_000
"""Points (scorer x version x hour) a series answer holds at most."""
_SCORERS = "(empty({scorers:Array(String)}) OR has({scorers:Array(String)}, Scorer))"

SERIES_ROLLUP_SQL = (
    "SELECT Scorer, VersionValue AS Version, toUnixTimestamp(Bucket) * 1000 AS hour_ms, sum(WY) / sum(W) AS mean,"
    f" sum(N) AS n FROM {TABLE} WHERE VersionKey = {{version_key:String}}"
    f" AND Bucket >= toStartOfHour(now() - toIntervalSecond({{since:UInt32}})) AND {_SCORERS}"
    " GROUP BY Scorer, Version, hour_ms ORDER BY Scorer, Version, hour_ms LIMIT {points:UInt32}"
)


def series_raw_sql(expression: str) -> str:
    return (
        f"SELECT Scorer, {expression} AS Version, toUnixTimestamp(toStartOfHour(RunTimestamp)) * 1000 AS hour_ms,"
        f" sum(Score / SampleRate) / sum(1 / SampleRate) AS mean, count() AS n {SCORES_WINDOW} AND {expression} != ''"
        " GROUP BY Scorer, Version, hour_ms ORDER BY Scorer, Version, hour_ms LIMIT {points:UInt32}"
    )


def worst_sql(expression: str) -> str:
    return (
        f"SELECT Scorer, {expression} AS Version, TraceId, Score {SCORES_WINDOW} AND {expression} != ''"
        " ORDER BY Scorer, Version, if(HigherIsBetter, Score, -Score), TraceId"
        f" LIMIT {WORST_PER_VERSION} BY Scorer, Version LIMIT {{groups:UInt32}}"
    )


_RECENT = (
    "SELECT TraceId, cityHash64(JSONExtractRaw(Run, 'input')) AS input_hash,"
    " substring(JSONExtractRaw(Run, 'input'), 1, 200) AS preview FROM scored_runs"
    " WHERE RunTimestamp >= now64(9) - toIntervalSecond({since:UInt32})"
    " AND JSONExtractRaw(Run, 'input') NOT IN ('', 'null', '[]', '\"\"')"
    " ORDER BY RunTimestamp DESC LIMIT {pair_scan:UInt32}"
)


def pairs_sql(expression: str) -> str:
    versions = (
        f"SELECT TraceId, any({expression}) AS Version {SCORES_WINDOW} AND {expression} != ''"
        " AND TraceId IN (SELECT TraceId FROM recent) GROUP BY TraceId"
    )
    return (
        f"WITH recent AS ({_RECENT}) SELECT any(r.preview) AS preview,"
        " groupArray({runs_per_input:UInt32})((v.Version, r.TraceId)) AS runs"
        f" FROM recent AS r INNER JOIN ({versions}) AS v ON r.TraceId = v.TraceId"
        " GROUP BY r.input_hash HAVING uniqExact(v.Version) >= 2"
        " ORDER BY count() DESC, r.input_hash LIMIT {inputs:UInt32}"
    )


async def version_details(store: Reads, by: str, since_s: int, scorers: Sequence[str] = ()) -> dict[str, Any]:
    """What the page draws and links, per scorer and version, and the inputs several versions ran on.

    ``{"series": [{scorer, version, hour_ms, mean, n}], "worst": [{scorer, version, trace_id, score}],
    "same_input": [{input, runs: [{version, trace_id}]}]}``.
    """
    expression, parameters = version_expression(by, kept=True)
    parameters.update(since=since_s, scorers=list(scorers), points=MAX_POINTS,
                      groups=MAX_GROUPS * WORST_PER_VERSION)  # fmt: skip
    key = rollup_key(by, COLUMNS.get(by))
    _, points = await store.read(SERIES_ROLLUP_SQL, {**key, **parameters})
    if not points:  # the roll-up does not hold this name in the window
        _, points = await store.read(series_raw_sql(expression), parameters)
    _, worst = await store.read(worst_sql(expression), parameters)
    parameters.update(pair_scan=PAIR_SCAN_RUNS, runs_per_input=RUNS_PER_INPUT, inputs=MAX_INPUTS)
    _, inputs = await store.read(pairs_sql(expression), parameters)
    return {
        "series": [
            {"scorer": str(s), "version": str(v), "hour_ms": int(h), "mean": float(m), "n": int(n)}
            for s, v, h, m, n in points
        ],
        "worst": [{"scorer": str(s), "version": str(v), "trace_id": str(t), "score": float(y)} for s, v, t, y in worst],
        "same_input": [
            {"input": str(preview), "runs": [{"version": str(v), "trace_id": str(t)} for v, t in sorted(runs)]}
            for preview, runs in inputs
        ],
    }
