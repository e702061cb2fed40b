"""Reads that rebuild runs from storage: after a restart, for backfill and preview, and for sessions.

Spans are acknowledged once stored, so after a crash the pending runs are in ``otel_traces``, and the GenAI
log events that carry their messages are in ``otel_logs``; ``score_decisions`` says which runs were already
handed to sampling. Trusted SQL with bound parameters only; the run assembler's side is
``spanscore.runs.recovery``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from spanscore.records import LogRecord, SpanEvent, SpanLink, SpanRecord
from spanscore.run import Run, Turn
from spanscore.storage.scored_runs import parse_stored_run, run_from_view

_SPAN_SELECT = """
SELECT TraceId, SpanId, ParentSpanId, SpanName, SpanKind, toUnixTimestamp64Nano(Timestamp), Duration,
       ServiceName, SpanAttributes, ResourceAttributes, StatusCode, StatusMessage, TraceState, ScopeName,
       ScopeVersion, arrayMap(t -> toUnixTimestamp64Nano(t), Events.Timestamp), Events.Name, Events.Attributes,
       Links.TraceId, Links.SpanId, Links.TraceState, Links.Attributes
FROM {database}.otel_traces
WHERE TraceId IN {ids:Array(String)}
ORDER BY TraceId, Timestamp
"""

# The traces with a span since ``since``, the latest first: the ones a restart most likely left unhandled (their
# runs were still waiting for their quiet period) come first, whatever the limit cuts.
_RECENT_TRACES = """
SELECT TraceId FROM {database}.otel_traces
WHERE Timestamp >= fromUnixTimestamp64Nano({since:Int64})
GROUP BY TraceId
ORDER BY max(Timestamp) DESC
LIMIT {limit:UInt32}
"""


# The traces with a span since ``since`` that may hold a run nothing decided on, the latest first:
# - a trace whose latest span began after its latest decision, score or session turn was written (never decided:
#   none was written; or a run of it began after the others were decided). A decision is written at least a quiet
#   period after its run's spans arrived, so a decided run's own spans began before it, unless the client's clock
#   runs ahead of this one by more than that (listed once more: ``handled_runs`` then says it is handled);
# - a trace with a ``sampled`` decision that no score of the same run and rule followed (scoring cut by the crash;
#   its session turn, written before scoring, does not count).
# Rows are bounded by their run's start (``RunTimestamp``, the tables' partition and sort key) a day before
# ``since``, so a restart reads the days it needs, not the retention; a run older than that counts as undecided
# here and ``handled_runs`` (by trace id) says it is handled.
_UNDECIDED_TRACES = """
SELECT t.TraceId FROM (
    SELECT TraceId, max(Timestamp) AS LastSpan FROM {database}.otel_traces
    WHERE Timestamp >= fromUnixTimestamp64Nano({since:Int64})
    GROUP BY TraceId
    HAVING LastSpan < fromUnixTimestamp64Nano({before:Int64})
) AS t
LEFT JOIN (
    SELECT TraceId, max(Timestamp) AS LastDecided FROM (
        SELECT TraceId, Timestamp FROM {database}.score_decisions
        WHERE RunTimestamp >= fromUnixTimestamp64Nano({runs_since:Int64}) AND Decision != 'sampled'
        UNION ALL
        SELECT TraceId, Timestamp FROM {database}.scores
        WHERE RunTimestamp >= fromUnixTimestamp64Nano({runs_since:Int64})
        UNION ALL
        SELECT TraceId, Timestamp FROM {database}.scored_runs
        WHERE RunTimestamp >= fromUnixTimestamp64Nano({runs_since:Int64}) AND SessionId != '' AND Target = 'run'
    )
    GROUP BY TraceId
) AS d ON t.TraceId = d.TraceId
WHERE t.LastSpan > d.LastDecided OR t.TraceId IN (
    SELECT TraceId FROM {database}.score_decisions
    WHERE RunTimestamp >= fromUnixTimestamp64Nano({runs_since:Int64}) AND Decision = 'sampled'
      AND (RunId, Rule) NOT IN (
        SELECT RunId, Rule FROM {database}.scores WHERE RunTimestamp >= fromUnixTimestamp64Nano({runs_since:Int64})
      )
)
ORDER BY t.LastSpan DESC
LIMIT {limit:UInt32}
"""
RUNS_BEFORE_S = 86_400
"""How long before the look-back a run may have begun and still have its decisions read by the listing."""


# The log records of the traces just read, by trace id (only records that name a trace can join a run).
_LOG_SELECT = """
SELECT toUnixTimestamp64Nano(Timestamp), TraceId, SpanId, EventName, SeverityText, SeverityNumber, Body,
       ServiceName, LogAttributes, ResourceAttributes, ScopeName, ScopeVersion
FROM {database}.otel_logs
WHERE TraceId IN {ids:Array(String)}
ORDER BY TraceId, Timestamp
"""
_NEVER = 2**63 - 1
"""A ``before_ns`` no span reaches (2262, the end of ``DateTime64(9)``)."""
ID_BATCH = 2_000
"""Ids per query: one bound array of 32-hex ids stays near 70 KB, within a server's form field limit
(``http_max_field_value_size``, 128 KiB: some 3,700 ids), where clickhouse-connect sends long bound values."""


def _batches(ids: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(ids), ID_BATCH):
        yield ids[start : start + ID_BATCH]


def log_from_row(row: tuple[Any, ...]) -> LogRecord:
    """Rebuild the decoded log record from an ``otel_logs`` row (the inverse of ``log_columns``)."""
    (time_ns, trace_id, span_id, event_name, severity_text, severity_number, body, service, attributes, resource,
     scope_name, scope_version) = row  # fmt: skip
    return LogRecord(
        time_ns=int(time_ns),
        trace_id=trace_id,
        span_id=span_id,
        event_name=event_name,
        severity_text=severity_text,
        severity_number=int(severity_number),
        body=body,
        service_name=service,
        attributes=dict(attributes),
        resource_attributes=dict(resource),
        scope_name=scope_name,
        scope_version=scope_version,
    )


def span_from_row(row: tuple[Any, ...]) -> SpanRecord:
    """Rebuild the decoded span from an ``otel_traces`` row (the inverse of the ``otel_traces_intake`` view)."""
    (trace_id, span_id, parent, name, kind, start, duration, service, attributes, resource, code, message, state,
     scope_name, scope_version, event_times, event_names, event_attributes, link_traces, link_spans, link_states,
     link_attributes) = row  # fmt: skip
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=kind,
        start_time_ns=int(start),
        end_time_ns=int(start) + int(duration),
        service_name=service,
        attributes=dict(attributes),
        resource_attributes=dict(resource),
        status_code=code,
        status_message=message,
        trace_state=state,
        scope_name=scope_name,
        scope_version=scope_version,
        events=tuple(
            SpanEvent(int(t), str(n), dict(a))
            for t, n, a in zip(event_times, event_names, event_attributes, strict=False)
        ),
        links=tuple(
            SpanLink(t, s, st, dict(a))
            for t, s, st, a in zip(link_traces, link_spans, link_states, link_attributes, strict=False)
        ),
    )


def recent_trace_spans(store: Any, since_ns: int, max_traces: int) -> Iterator[dict[str, list[SpanRecord]]]:
    """The spans of up to ``max_traces`` traces with a span stored since ``since_ns``, by trace id.

    The latest traces first, ``ID_BATCH`` traces per query and per dict, read as the caller asks for them: a
    caller that stops (the run assembler at its memory bounds) reads no more. One query of all of them held
    10,000 traces of LLM-sized spans as rows and records at once (a restarted service peaked at 3.7 GiB).
    """
    latest = _RECENT_TRACES.replace("{database}", store.database)
    ids = [row[0] for row in store.internal_query(latest, {"since": since_ns, "limit": max_traces})]
    for batch in _batches(ids):
        yield trace_spans(store, batch)


def trace_spans(store: Any, trace_ids: list[str]) -> dict[str, list[SpanRecord]]:
    """The spans of these traces, by trace id in the order given (a trace with none stored maps to [])."""
    sql = _SPAN_SELECT.replace("{database}", store.database)
    grouped: dict[str, list[SpanRecord]] = {trace_id: [] for trace_id in trace_ids}
    for batch in _batches(trace_ids):
        for row in store.internal_query(sql, {"ids": batch}):
            grouped[row[0]].append(span_from_row(row))
    return grouped


def undecided_trace_ids(store: Any, since_ns: int, limit: int, before_ns: int | None = None) -> list[str]:
    """Traces with a span stored since ``since_ns`` that may hold a run nothing decided on, latest first.

    What a restart must still hand to sampling beyond the latest traces it reads first (a crash under load left
    seconds of stored traffic that run assembly had not handed on, more than half its bounds hold, #43), and
    what a fleet survivor takes up of a lost replica's. See ``_UNDECIDED_TRACES`` for what counts; a trace
    listed that was handled after all is told apart by ``handled_runs``, run by run, before anything is scored.
    ``before_ns``: only traces whose spans all started before it (a lost fleet replica's, begun before the loss).
    On a cluster the subqueries over the other Distributed tables run once on the node that asks
    (``distributed_product_mode``, set on every read of spanscore's own).
    """
    sql = _UNDECIDED_TRACES.replace("{database}", store.database)
    runs_since = since_ns - RUNS_BEFORE_S * 1_000_000_000
    before = _NEVER if before_ns is None else before_ns
    parameters = {"since": since_ns, "before": before, "runs_since": runs_since, "limit": limit}
    return [row[0] for row in store.internal_query(sql, parameters)]


def latest_span_ns(store: Any, now_ns: int) -> int:
    """The start time of the latest span stored, at most ``now_ns`` (``now_ns`` when none is stored).

    Where a restart's look-back ends: after a downtime longer than the look-back, a window ending at the
    restart found nothing of what the crash left (spans from a clock ahead of this one are not a reason to
    look back less than from now).
    """
    # Answered from each part's min-max index (``_minmax_count_projection``): no column is read.
    sql = (
        "SELECT max(Timestamp) > toDateTime64(0, 9), toUnixTimestamp64Nano(max(Timestamp))"
        f" FROM {store.database}.otel_traces"
    )
    rows = store.internal_query(sql)
    if not rows or not rows[0][0]:
        return now_ns
    return min(now_ns, int(rows[0][1]))


def trace_logs(store: Any, trace_ids: list[str]) -> dict[str, list[LogRecord]]:
    """The log records of these traces, by trace id."""
    sql = _LOG_SELECT.replace("{database}", store.database)
    grouped: dict[str, list[LogRecord]] = defaultdict(list)
    for batch in _batches(trace_ids):
        for row in store.internal_query(sql, {"ids": batch}):
            grouped[row[1]].append(log_from_row(row))
    return grouped


def handled_runs(store: Any, trace_ids: Iterable[str]) -> dict[str, dict[str, bool]]:
    """Every subject decided on or stored as a session turn, and whether it needs nothing more.

    Subjects are runs, or spans for span targets. A subject needs nothing more when every rule that sampled it
    has a score row for it. One whose ``sampled`` decision was written but whose scoring was cut short (a crash
    mid-job) is not handled, so recovery scores its run again; deterministic score ids make the second attempt
    replace rather than duplicate anything the first one wrote.
    """
    database = store.database
    sql = (
        "SELECT d.TraceId, d.RunId, hasAll(s.ScoredRules, d.SampledRules) FROM ("
        f"  SELECT TraceId, RunId, groupArrayIf(Rule, Decision = 'sampled') AS SampledRules"
        f"  FROM {database}.score_decisions FINAL WHERE TraceId IN {{ids:Array(String)}}"
        "  GROUP BY TraceId, RunId"
        ") AS d LEFT JOIN ("
        f"  SELECT RunId, groupUniqArray(Rule) AS ScoredRules FROM {database}.scores"
        "  WHERE TraceId IN {ids:Array(String)} GROUP BY RunId"
        ") AS s ON d.RunId = s.RunId"
    )
    turns = (
        f"SELECT DISTINCT TraceId, RunId FROM {database}.scored_runs"
        " WHERE TraceId IN {ids:Array(String)} AND Target = 'run' AND SessionId != ''"
    )
    handled: dict[str, dict[str, bool]] = defaultdict(dict)
    for batch in _batches(list(dict.fromkeys(trace_ids))):  # a trace's decisions and scores share its batch
        for trace_id, run_id, done in store.internal_query(sql, {"ids": batch}):
            handled[trace_id][run_id] = bool(done)
        # A session turn stored was handed to its session (the session's own recovery starts from these rows):
        # handled, though no rule decided the run itself. Its decisions, when a run rule made some, were
        # written before it and say the rest.
        for trace_id, run_id in store.internal_query(turns, {"ids": batch}):
            handled[trace_id].setdefault(run_id, True)
    return handled


def spend_since(store: Any, rules: list[str], since_ns: int) -> dict[str, tuple[float, int, int]]:
    """Judge spend per rule in ``scores`` since ``since_ns``: (dollars, tokens, scored runs).

    FINAL, so a score written twice (a retry, a replay) is counted once. A score whose judge litellm could not
    price (``CostUsd`` NULL) counts its tokens and no dollars: the sum of only such scores is 0, not NULL.
    """
    if not rules:
        return {}
    rows = store.internal_query(
        "SELECT Rule, ifNull(sum(CostUsd), 0), sum(InputTokens + OutputTokens), uniqExact(RunId)"
        f" FROM {store.database}.scores FINAL"
        " WHERE Timestamp >= fromUnixTimestamp64Nano({since:Int64}) AND Rule IN {rules:Array(String)}"
        " GROUP BY Rule",
        {"since": since_ns, "rules": rules},
    )
    return {rule: (float(usd), int(tokens), int(runs)) for rule, usd, tokens, runs in rows}


def unscored_sessions(store: Any, since_ns: int, *, limit: int = 100_000) -> list[Run]:
    """After a restart, or for a session's new fleet owner: the latest stored turn of every open session.

    Open means a turn was stored since ``since_ns`` and it was not settled after it: no session decision came
    later, or a rule sampled it later and has no score after that decision (its scorer was killed in the judge
    call; a stored decision alone settled it, and the session was never scored). A session being scored right
    now, or whose score still waits in a writer's buffer, looks open too: after a restart that writer died with
    the process, and a fleet's new owner leaves such a session to its claimant while that one is alive
    (``FleetClaims.covered`` and ``scoring_elsewhere``).
    """
    database = store.database
    candidates = (
        f"SELECT SessionId FROM {database}.scored_runs WHERE SessionId != '' AND Target = 'run'"
        " AND Timestamp >= fromUnixTimestamp64Nano({since:Int64})"
    )
    rows = store.internal_query(
        "SELECT t.Run FROM ("
        "  SELECT SessionId, argMax(Run, Timestamp) AS Run, max(Timestamp) AS LastTurn"
        f"  FROM {database}.scored_runs WHERE SessionId != '' AND Target = 'run'"
        "  AND Timestamp >= fromUnixTimestamp64Nano({since:Int64}) GROUP BY SessionId"
        ") AS t LEFT JOIN ("
        "  SELECT d.RunId AS RunId, max(d.Decided) AS Decided,"
        "   max(if(d.Sampled > ifNull(s.Scored, toDateTime64(0, 9)), d.Sampled, toDateTime64(0, 9))) AS Unscored"
        "  FROM ("
        "   SELECT RunId, Rule, max(Timestamp) AS Decided, maxIf(Timestamp, Decision = 'sampled') AS Sampled"
        f"   FROM {database}.score_decisions WHERE Target = 'session' AND RunId GLOBAL IN ({candidates})"
        "   GROUP BY RunId, Rule"
        "  ) AS d LEFT JOIN ("
        "   SELECT RunId, Rule, max(Timestamp) AS Scored"
        f"   FROM {database}.scores WHERE Target = 'session' AND RunId GLOBAL IN ({candidates})"
        "   GROUP BY RunId, Rule"
        "  ) AS s ON d.RunId = s.RunId AND d.Rule = s.Rule"
        "  GROUP BY d.RunId"
        ") AS d ON t.SessionId = d.RunId"
        " WHERE d.Decided < t.LastTurn OR d.Unscored >= t.LastTurn LIMIT {limit:UInt32}",
        {"since": since_ns, "limit": limit},
    )
    return [run_from_view(parse_stored_run(row[0])) for row in rows]


def session_turn_keys(store: Any, since_ns: int, *, limit: int = 200_000) -> list[tuple[str, str, str]]:
    """(session id, trace id, run id) of every session turn stored by any replica whose run started since then.

    A fleet's session owners read these keys often and the turns' bodies only for the few they lack.
    """
    rows = store.internal_query(
        f"SELECT DISTINCT SessionId, TraceId, RunId FROM {store.database}.scored_runs"
        " WHERE SessionId != '' AND Target = 'run' AND Timestamp >= fromUnixTimestamp64Nano({since:Int64})"
        " LIMIT {limit:UInt32}",
        {"since": since_ns, "limit": limit},
    )
    return [(str(session), str(trace), str(run)) for session, trace, run in rows]


def stored_turn_runs(store: Any, keys: list[tuple[str, str]]) -> list[Run]:
    """The stored runs of these (trace id, run id) turns, the newest row of each."""
    if not keys:
        return []
    sql = (
        f"SELECT argMax(Run, Version) FROM {store.database}.scored_runs"
        " WHERE (TraceId, RunId) IN {keys:Array(Tuple(String, String))} AND Target = 'run'"
        " GROUP BY TraceId, RunId"
    )
    runs: list[Run] = []
    for start in range(0, len(keys), ID_BATCH // 2):  # a key is two ids
        rows = store.internal_query(sql, {"keys": keys[start : start + ID_BATCH // 2]})
        runs.extend(run_from_view(parse_stored_run(row[0])) for row in rows)
    return runs


SESSION_TURN_KEYS_SQL = (
    "SELECT SessionId, TraceId, RunId FROM ("
    " SELECT SessionId, TraceId, RunId, RunTimestamp FROM {database}.scored_runs"
    " WHERE SessionId IN {{ids:Array(String)}} AND Target = 'run'"
    " ORDER BY SessionId DESC, RunTimestamp DESC LIMIT 1 BY SessionId, RunTimestamp, TraceId, RunId"
    ") LIMIT {{limit:UInt32}} BY SessionId"
)
"""The keys of the newest ``limit`` stored turns of each of some sessions, a rewritten turn once.

Read from the projection ``session_turn_keys`` (0024), sorted by session and time, in reverse: a session of
many turns returns ``limit`` rows, not one per turn it ever had."""


def session_turns(
    store: Any, session_ids: Iterable[str], *, limit: int, held: dict[str, set[str]] | None = None
) -> dict[str, list[Turn]]:
    """The stored turns of these sessions that memory does not hold, among each one's newest ``limit``.

    No time window: a session is every run with its id, and one memory still holds keeps all its turns within
    the caps, however long ago they came, so one read back keeps them too (a window of ``max_duration_s`` scored
    a continuation after a longer pause on its new turns alone, and that score replaced the whole session's).
    Every session new to memory asks, and most have nothing stored that memory lacks, so the read is in two
    steps: the keys of the sessions' newest turns first (small columns: some 17 ms for 100 sessions among
    200,000 stored runs), then the runs only of the turns missing from ``held`` (run ids by session), by
    primary key. Reading the runs by session id at once read most of the ``Run`` column (280 ms there): the
    table is in trace order, so one session's turns are spread over every granule. Oldest first; a session with
    nothing missing is absent. One query per batch of sessions, not per session: a poll can make hundreds ready.
    """
    held = held or {}
    turns: dict[str, list[Turn]] = {}
    missing: dict[tuple[str, str], str] = {}
    """The session of each (trace id, run id) turn to read."""
    for batch in _batches(sorted(set(session_ids))):
        rows = store.internal_query(
            SESSION_TURN_KEYS_SQL.format(database=store.database), {"ids": batch, "limit": max(1, limit)}
        )
        for session_id, trace_id, run_id in rows:
            if str(run_id) not in held.get(str(session_id), set()):
                missing[(str(trace_id), str(run_id))] = str(session_id)
    for run in stored_turn_runs(store, list(missing)):
        if (session_id := missing.get((run.trace_id, run.run_id))) is not None:
            turns.setdefault(session_id, []).append(Turn.of(run))
    for found in turns.values():
        found.sort(key=lambda turn: (turn.start_time_ns, turn.run_id))
    return turns


def settled_sessions(store: Any, session_ids: Iterable[str]) -> set[str]:
    """Of these sessions, those settled once: a session score stored, or a session decision other than sampled.

    With ``collector.sessions.rescore: never`` a settled session is not scored again, also once it left
    memory (``keep_scored_s``, a restart). A ``sampled`` decision without a score is not settled: its scorer
    was killed in the judge call, and the session is still owed its first scores.
    """
    ids = sorted(set(session_ids))
    if not ids:
        return set()
    database = store.database
    sql = (
        f"SELECT DISTINCT RunId FROM {database}.scores WHERE Target = 'session' AND RunId IN {{ids:Array(String)}}"
        f" UNION DISTINCT SELECT DISTINCT RunId FROM {database}.score_decisions"
        " WHERE Target = 'session' AND Decision != 'sampled' AND RunId IN {ids:Array(String)}"
    )
    settled: set[str] = set()
    for batch in _batches(ids):
        settled.update(str(row[0]) for row in store.internal_query(sql, {"ids": batch}))
    return settled
