"""The scores an alert looks at: one scorer's rows in a window of run time, newest first, bounded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from spanscore.storage.reads.version_window import version_window


class Queries(Protocol):
    def internal_query(self, sql: str, parameters: dict[str, object] | None = None) -> list[tuple[object, ...]]: ...


def window_scores(
    store: Queries, scorer: str, where: Mapping[str, str], window_s: int, limit: int, versions: str | None = None
) -> list[tuple[Any, ...]]:
    """(score, sample rate, label) of ``ok`` scores whose run started in the last ``window_s`` seconds.

    ``where`` maps column names (from a fixed list, never user text) to values, which travel as parameters.
    With ``versions`` (a run attribute, see reads.compare) the rows are instead one per version with the sums
    the comparison needs (reads.version_window: from the roll-up when ``where`` allows).
    """
    if versions is not None:
        return list(version_window(store, scorer, where, window_s, versions))
    filters = "".join(f" AND {column} = {{w{index}:String}}" for index, column in enumerate(where))
    parameters = dict[str, Any]()
    sql = (
        "SELECT Score, SampleRate, Label FROM scores FINAL"
        " WHERE Scorer = {scorer:String} AND Status = 'ok'"
        " AND RunTimestamp >= now64(9) - toIntervalSecond({window:UInt32})"
        f"{filters} ORDER BY RunTimestamp DESC LIMIT {{limit:UInt32}}"
    )
    parameters.update({"scorer": scorer, "window": window_s, "limit": limit})
    parameters.update({f"w{index}": value for index, value in enumerate(where.values())})
    rows = store.internal_query(sql, parameters)
    return [(None if r[0] is None else float(r[0]), float(r[1]), str(r[2]), *r[3:]) for r in rows]  # type: ignore[arg-type]
