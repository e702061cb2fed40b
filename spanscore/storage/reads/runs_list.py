"""The dashboard's runs list: one row per trace a rule decided on, searchable, paged and sorted.

A trace is listed when ``score_decisions`` holds a decision about it in the window: every run a rule
looked at, scored or not. Its session, user and scores come from ``scores FINAL`` (a run nobody scored has
none, so a session or user search finds scored runs only). Text is searched in what the scorers received
(``scored_runs``: input, output, tool calls and context, as stored JSON), case-insensitively. A version
(``version_by`` and ``version``, as ``report compare`` names them) matches a column every score has or an
attribute kept with the scores (``collector.runs.version_attributes``); the runs whose scores carry it.

Bounds, since a search reads raw rows rather than a roll-up: every value from the request is a bound
parameter of the one statement below; the window is the request's; the text search looks at the newest
``TEXT_SCAN_RUNS`` scored runs of the window only (a top-N read, so its memory is bounded too); each list
holds at most ``MAX_PER_PAGE`` runs, an offset at most ``MAX_PAGE`` pages in; a run shows at most
``SCORES_PER_RUN`` scores. The dashboard's reader adds its time and memory limits and read-only mode
(``storage.query_max_execution_time_s``, ``storage.query_max_memory_bytes``).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from typing import Any, Literal

from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.reads.compare import COLUMNS, KEPT_SQL
from spanscore.storage.reads.dashboard import json_rows
from spanscore.storage.scores import VERSION_PREFIX

TEXT_SCAN_RUNS = 20_000
"""A text search reads the text of this many scored runs at most: the newest of the window."""
MAX_PER_PAGE = 100
MAX_PAGE = 1000
SCORES_PER_RUN = 20

Sort = Literal["newest", "oldest", "worst"]
Outcome = Literal["", "pass", "fail", "error"]

_START = "now() - toIntervalSecond({since:UInt32})"
_ORDER = {
    "newest": "run_time_ms DESC, trace_id",
    "oldest": "run_time_ms ASC, trace_id",
    "worst": "worst ASC NULLS LAST, run_time_ms DESC, trace_id",
}
_SCORER_MATCH = """Scorer = {scorer:String}
        AND ({outcome:String} = '' OR ({outcome:String} = 'error' AND Status = 'error')
             OR ({outcome:String} IN ('pass', 'fail') AND Label = {outcome:String}))
        AND (NOT {has_below:Bool} OR (Status = 'ok' AND Score < {below:Float64}))"""

_VERSION_OF_SCORE = (
    "multiIf("
    + "".join(f"{{version_by:String}} = '{name}', toString({column}), " for name, column in COLUMNS.items())
    + f"Attributes[concat('{VERSION_PREFIX}', {{version_by:String}})])"
)
"""A score's value of the version attribute the search names: one fixed expression, the name a bound parameter."""

_RUNS_SQL = f"""
SELECT d.trace_id AS trace_id, d.run_time_ms AS run_time_ms, d.service_name AS service_name,
       d.agent_name AS agent_name, d.decisions AS decisions, d.sampled AS sampled,
       s.session_id AS session_id, s.user_id AS user_id, s.scores AS scores, s.worst AS worst
FROM (
    SELECT TraceId AS trace_id, toUnixTimestamp64Milli(min(RunTimestamp)) AS run_time_ms,
           argMin(ServiceName, RunTimestamp) AS service_name, anyIf(AgentName, AgentName != '') AS agent_name,
           count() AS decisions, countIf(Decision IN ('sampled', 'duplicate')) AS sampled
    FROM score_decisions FINAL
    WHERE RunTimestamp >= {_START} AND startsWith(TraceId, {{trace:String}})
      AND ({{service:String}} = '' OR ServiceName = {{service:String}})
      AND ({{agent:String}} = '' OR AgentName = {{agent:String}})
    GROUP BY TraceId
) AS d
LEFT JOIN (
    SELECT TraceId AS trace_id, anyIf(SessionId, SessionId != '') AS session_id,
           anyIf(UserId, UserId != '') AS user_id,
           groupArray({SCORES_PER_RUN})(tuple(Scorer, Rule, Score, Label, Status, HigherIsBetter)) AS scores,
           min(if(Status = 'ok' AND Score IS NOT NULL, if(HigherIsBetter, Score, -Score), NULL)) AS worst,
           countIf({_SCORER_MATCH}) AS matched,
           countIf({{version_by:String}} != '' AND {_VERSION_OF_SCORE} = {{version:String}}) AS version_matched
    FROM scores FINAL
    WHERE RunTimestamp >= {_START} AND startsWith(TraceId, {{trace:String}})
    GROUP BY TraceId
) AS s ON s.trace_id = d.trace_id
WHERE ({{session:String}} = '' OR s.session_id = {{session:String}})
  AND ({{user:String}} = '' OR s.user_id = {{user:String}})
  AND ({{scorer:String}} = '' OR s.matched > 0)
  AND ({{version_by:String}} = '' OR s.version_matched > 0)
  AND ({{text:String}} = '' OR d.trace_id IN (
      SELECT TraceId FROM (
          SELECT TraceId, Run FROM scored_runs WHERE RunTimestamp >= {_START}
          ORDER BY RunTimestamp DESC LIMIT {TEXT_SCAN_RUNS}
      ) WHERE positionCaseInsensitiveUTF8(Run, {{text:String}}) > 0))
ORDER BY {{order}}
LIMIT {{limit:UInt32}} OFFSET {{offset:UInt64}}
"""
RUNS_SQL = {sort: _RUNS_SQL.replace("{order}", order) for sort, order in _ORDER.items()}
"""One statement per sort order: the order is chosen from these, never written from the request."""

SCORE_FIELDS = ("scorer", "rule", "score", "label", "status", "higher_is_better")


@dataclass(frozen=True, slots=True)
class RunSearch:
    """What to look for; an empty string means "any". ``trace`` is a lower-case hex prefix."""

    since_s: int
    trace: str = ""
    session: str = ""
    user: str = ""
    agent: str = ""
    service: str = ""
    scorer: str = ""
    outcome: Outcome = ""
    below: float | None = None
    text: str = ""
    version_by: str = ""
    version: str = ""
    sort: Sort = "newest"
    page: int = 1
    per_page: int = 50


async def search_runs(store: ClickHouseStore, search: RunSearch) -> dict[str, Any]:
    """``{"runs": [...], "has_more": bool}``: one page of the runs ``search`` matches, in its order."""
    parameters = asdict(search)
    sort, page, per_page = parameters.pop("sort"), parameters.pop("page"), parameters.pop("per_page")
    below = parameters.pop("below")
    parameters.update(
        since=parameters.pop("since_s"),
        has_below=below is not None,
        below=below if below is not None else 0.0,
        limit=per_page + 1,
        offset=(page - 1) * per_page,
    )
    columns, rows = await store.read(RUNS_SQL[sort], parameters)
    found = await asyncio.to_thread(json_rows, columns, rows)
    for run in found:
        run["scores"] = [dict(zip(SCORE_FIELDS, score, strict=True)) for score in run["scores"]]
    answer: dict[str, Any] = {"runs": found[:per_page], "has_more": len(found) > per_page}
    if not found and search.version_by and search.version_by not in COLUMNS:
        key = VERSION_PREFIX + search.version_by
        _, kept = await store.read(KEPT_SQL, {"since": search.since_s, "version_key": key})
        if not (kept and kept[0][0]):
            answer["note"] = (
                f"no score of this window keeps {search.version_by!r}: the runs list matches score columns and the "
                "attributes kept with scores (collector.runs.version_attributes); report compare also reads it "
                "from the spans"
            )
    return answer
