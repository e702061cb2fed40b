"""Scores whose latest version is an error, counted from ``scores FINAL``: what is broken now, not what once was.

A judge outage leaves error scores behind, and a backfill replaces them with the same score ids. Counters of
scores written (``scores_written``) and the roll-ups (which count inserts) keep the errors forever; these
reads give the number still standing, so ``spanscore status``, ``/metrics`` and the dashboard clear once the
runs were scored again.

Only score ids that ever held an error are folded with FINAL (the inner select reads the Status column of
the window's rows, no merge), so the count stays cheap on a store of healthy scores. ScoreId is in the
sorting key, so filtering on it before FINAL keeps every version of a score together.
"""

from __future__ import annotations

from typing import Protocol

ERRORS_HELD_DAYS = 7
"""Errors of runs older than this are no longer counted (a backfill of that age is unlikely to be asked)."""

_WINDOW = "RunTimestamp >= now() - toIntervalSecond({since:UInt32})"
_HELD = f"""
SELECT Rule, Scorer, count()
FROM scores FINAL
WHERE {_WINDOW} AND Status = 'error'
  AND ScoreId IN (SELECT ScoreId FROM scores WHERE {_WINDOW} AND Status = 'error')
  AND ({{rule:String}} = '' OR Rule = {{rule:String}})
  AND ({{target:String}} = '' OR Target = {{target:String}})
GROUP BY Rule, Scorer
"""

SCORER_ERRORS_SQL = """
SELECT Scorer AS scorer, count() AS errors
FROM scores FINAL
WHERE RunTimestamp >= toStartOfHour(now() - toIntervalSecond({since:UInt32})) AND Status = 'error'
  AND ScoreId IN (
      SELECT ScoreId FROM scores
      WHERE RunTimestamp >= toStartOfHour(now() - toIntervalSecond({since:UInt32})) AND Status = 'error')
  AND NOT startsWith(Rule, 'source:')
  AND ({rule:String} = '' OR Rule = {rule:String}) AND ({target:String} = '' OR Target = {target:String})
GROUP BY Scorer
"""
"""The dashboard's Errors per scorer over its window (which starts at an hour, like the roll-ups it sits next to)."""


class Queries(Protocol):
    def internal_query(self, sql: str, parameters: dict[str, object] | None = None) -> list[tuple[object, ...]]: ...


def errors_held(
    store: Queries, since_s: int = ERRORS_HELD_DAYS * 86400, *, rule: str = "", target: str = ""
) -> dict[tuple[str, str], int]:
    """(rule, scorer) -> scores of runs in the last ``since_s`` seconds whose latest version is an error."""
    rows = store.internal_query(_HELD, {"since": int(since_s), "rule": rule, "target": target})
    return {(str(r), str(s)): int(n) for r, s, n in rows}  # type: ignore[call-overload]
