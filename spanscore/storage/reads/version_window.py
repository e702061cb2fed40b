"""The version alert's read: per version of one scorer, the comparison's sums over the window and its first score.

The alert (``aggregate: version_diff``) needs, per version, only what ``report compare`` needs (the count and
the weighted sums, spanscore.alerting.comparison.Sums) and the run time of its first score in the window, which
decides which version is the newest. With no filter beyond the rule, the whole hours of the window are read from
the roll-up ``scores_versions_1h`` (migration 0018), and only the hour the window starts in, whose start cuts
it, from the scores: the sums add up to exactly those of the raw path. A version's first score is the roll-up's
first hour for it, made exact by the raw read of that hour where two versions first appear in the same hour.
Any other filter (service, agent, model, source, target) is not a roll-up key, so the scores are read.
Only spanscore's own ``ok`` scores count, as in the comparison (outside scores carry no sampling weight).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Protocol

from spanscore.storage.reads.compare import COLUMNS, version_expression
from spanscore.storage.reads.compare_rollup import rollup_key
from spanscore.storage.schema.version_rollup import TABLE

HOUR_NS = 3600 * 10**9
_SUMS = (
    "count() AS n, sum(1. / SampleRate) AS w, sum(1. / (SampleRate * SampleRate)) AS w2,"
    " sum(assumeNotNull(Score) / SampleRate) AS wy, sum(assumeNotNull(Score) / (SampleRate * SampleRate)) AS w2y,"
    " sum(assumeNotNull(Score) * assumeNotNull(Score) / (SampleRate * SampleRate)) AS w2y2,"
    " countIf(assumeNotNull(Score) NOT IN (0, 1)) AS not_binary, min(assumeNotNull(Score)), max(assumeNotNull(Score)),"
    " sum(1 / pow(SampleRate, 4)), count()"
)
_OK = "Status = 'ok' AND Source = 'spanscore' AND Score IS NOT NULL AND SampleRate > 0"
_ROLLUP = (
    "SELECT VersionValue, toUnixTimestamp(min(Bucket)) * 1000000000, sum(N), sum(W), sum(W2), sum(WY), sum(W2Y),"
    f" sum(W2Y2), sum(NotBinary), min(Low), max(High), sum(W4), sum(N4) FROM {TABLE}"
    " WHERE VersionKey = {version_key:String} AND Scorer = {scorer:String}"
    " AND ({rule:String} = '' OR Rule = {rule:String}) AND Bucket >= toDateTime({hours_from:UInt32})"
    " GROUP BY VersionValue"
)

Row = tuple[str, int, int, float, float, float, float, float, int, float, float, float, int]
"""(version, first run time ns, n, sum w, sum w^2, sum w*y, sum w^2*y, sum w^2*y^2, scores not 0 or 1, lowest
score, highest score, sum w^4, the scores sum w^4 covers: fewer than n over roll-up hours before migration 0020)."""


class Queries(Protocol):
    def internal_query(self, sql: str, parameters: dict[str, object] | None = None) -> list[tuple[object, ...]]: ...


def rolled_up(where: Mapping[str, str]) -> bool:
    """Whether the roll-up can answer: it is keyed by rule, scorer and version only."""
    return set(where) <= {"Rule"}


def version_window(
    store: Queries, scorer: str, where: Mapping[str, str], window_s: int, by: str, rollup: bool | None = None
) -> list[Row]:
    """Per version of ``by``: its sums and first score's run time over the last ``window_s`` seconds.

    ``rollup`` None chooses (the roll-up when ``where`` allows it); False forces the scores, for comparison.
    """
    start_ns = time.time_ns() - window_s * 10**9
    use_rollup = rolled_up(where) if rollup is None else rollup and rolled_up(where)
    if not use_rollup:
        return _raw(store, scorer, where, by, start_ns, None)
    hours_from_ns = -(-start_ns // HOUR_NS) * HOUR_NS  # the first whole hour inside the window
    edge = _raw(store, scorer, where, by, start_ns, hours_from_ns)
    parameters: dict[str, object] = {
        "scorer": scorer,
        "rule": where.get("Rule", ""),
        "hours_from": hours_from_ns // 10**9,
    }
    parameters.update(rollup_key(by, COLUMNS.get(by)))
    hours = [_row(r) for r in store.internal_query(_ROLLUP, parameters)]
    merged = _merge(edge, hours)
    return _exact_first_seen(store, scorer, where, by, merged, {r[0] for r in edge})


def _raw(
    store: Queries, scorer: str, where: Mapping[str, str], by: str, start_ns: int, end_ns: int | None
) -> list[Row]:
    expression, parameters = version_expression(by, kept=True)
    filters = "".join(f" AND {column} = {{w{index}:String}}" for index, column in enumerate(where))
    sql = (
        f"SELECT {expression} AS V, toUnixTimestamp64Nano(min(RunTimestamp)), {_SUMS} FROM scores FINAL"
        f" WHERE Scorer = {{scorer:String}} AND {_OK} AND V != ''"
        " AND RunTimestamp >= fromUnixTimestamp64Nano({start:Int64})"
        " AND ({end:Int64} = 0 OR RunTimestamp < fromUnixTimestamp64Nano({end:Int64}))"
        f"{filters} GROUP BY V"
    )
    parameters.update({"scorer": scorer, "start": start_ns, "end": end_ns or 0})
    parameters.update({f"w{index}": value for index, value in enumerate(where.values())})
    return [_row(r) for r in store.internal_query(sql, parameters)]


def _row(r: tuple[Any, ...]) -> Row:
    sums = (float(r[3]), float(r[4]), float(r[5]), float(r[6]), float(r[7]))
    return (str(r[0]), int(r[1]), int(r[2]), *sums, int(r[8]), float(r[9]), float(r[10]), float(r[11]), int(r[12]))


def _merge(*parts: list[Row]) -> list[Row]:
    """Add up the sums of one version across parts; its first time is the earliest."""
    merged: dict[str, Row] = {}
    for part in parts:
        for row in part:
            old = merged.get(row[0])
            if old is None:
                merged[row[0]] = row
            else:
                sums = tuple(a + b for a, b in zip(old[2:9], row[2:9], strict=True))
                extremes = (min(old[9], row[9]), max(old[10], row[10]))
                fourth = (old[11] + row[11], old[12] + row[12])
                merged[row[0]] = (row[0], min(old[1], row[1]), *sums, *extremes, *fourth)  # type: ignore[assignment]
    return sorted(merged.values())


def _exact_first_seen(
    store: Queries, scorer: str, where: Mapping[str, str], by: str, rows: list[Row], exact: set[str]
) -> list[Row]:
    """Replace a first hour by the first score's time where versions first appear in the same hour.

    The versions whose first score fell in the window's cut first hour already have it exactly (``exact``).
    """
    by_hour: dict[int, list[str]] = {}
    for row in rows:
        if row[0] not in exact:
            by_hour.setdefault(row[1], []).append(row[0])
    firsts: dict[str, int] = {}
    for hour_ns, versions in by_hour.items():
        if len(versions) > 1:  # versions of the cut first hour are earlier than every whole hour
            firsts.update({r[0]: r[1] for r in _raw(store, scorer, where, by, hour_ns, hour_ns + HOUR_NS)})
    return [(r[0], firsts.get(r[0], r[1]), *r[2:]) if r[0] in firsts else r for r in rows]
