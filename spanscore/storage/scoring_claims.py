"""Scoring claims in the shared store: which replica is about to score a run, written before its judge call.

A fleet replica killed after it stored a batch but before it acknowledged it leaves the exporter to send the
batch again, to another replica, which assembles the same run. Without a claim that replica cannot tell the run
is being judged already (the first replica's decisions and scores wait in its writers' buffers, or died with
it), and judges it a second time. So a replica writes a claim row (``scoring_claims``, migration 0021) and waits
for the store to take it before it calls a judge, and every replica reads the claims, the claimants' liveness
(their heartbeats in ``fleet_heartbeats``) and whether a score exists, in one query per dispatch round.
Blocking calls: run them in a thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from spanscore.storage.fleet_records import Store
from spanscore.storage.reads.recovery import ID_BATCH
from spanscore.storage.scored_runs import parse_stored_run

_COLUMNS = ["At", "TraceId", "RunId", "Replica", "Instance", "Session", "Epoch"]
Key = tuple[str, str]
"""(trace id, run id) of a run; ('', session id) of a session."""


@dataclass(frozen=True, slots=True)
class Claimant:
    replica: str
    instance: str
    heartbeat: bool
    """Its process wrote a "joined" heartbeat within the window asked for."""
    at: float = 0.0
    """When the store took its claim (the server's clock, seconds since the epoch): the earliest claim wins."""


@dataclass(slots=True)
class ClaimState:
    claimants: list[Claimant] = field(default_factory=list)
    done: set[tuple[str, str]] = field(default_factory=set)
    """(rule, scorer) pairs with a score row for the key (any status)."""

    @property
    def scored(self) -> bool:
        return bool(self.done)


def _beating(database: str) -> str:
    """The process instances whose latest heartbeat within the last ``{ms}`` milliseconds says "joined"."""
    return (
        f"SELECT Instance FROM {database}.fleet_heartbeats WHERE At >= now64(3) - toIntervalMillisecond({{ms:UInt64}})"
        " GROUP BY Instance HAVING argMax(Joined, At) = 1"
    )


def _session_scored(database: str) -> str:
    """Per session among ``{ids}``: when its latest session score was written (``Scored``)."""
    return (
        f"SELECT RunId, max(Timestamp) AS Scored FROM {database}.scores"
        " WHERE Target = 'session' AND RunId IN {ids:Array(String)} GROUP BY RunId"
    )


def write_claims(store: Store, keys: Sequence[Key], replica: str, instance: str, token: tuple[int, int]) -> None:
    """One row per key: this process (``instance`` of ``replica``, under fence ``token``) scores it now.

    ``At`` is the server's clock, not the replica's: two replicas that claim one run compare their claims' times
    (``claim_states``), and one clock orders them as the store took them.
    """
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), ID_BATCH // 2):  # a key is two ids
        store.client.command(
            f"INSERT INTO {store.database}.scoring_claims ({', '.join(_COLUMNS)})"
            " SELECT now64(3), k.1, k.2, {replica:String}, {instance:String}, {session:UInt64}, {epoch:UInt64}"
            " FROM (SELECT arrayJoin({keys:Array(Tuple(String, String))}) AS k)",
            parameters={
                "keys": unique[start : start + ID_BATCH // 2], "replica": replica, "instance": instance,
                "session": token[0], "epoch": token[1],
            },
        )  # fmt: skip


def claim_states(
    store: Store, keys: Sequence[Key], alive_within_s: float, *, with_scores: bool = True
) -> dict[Key, ClaimState]:
    """Per key that has a claim or a score: who claimed it, whether they beat lately, and what is scored.

    ``with_scores=False`` reads the claims only (``done`` stays empty): a claim read back right after it was
    written asks only who else claimed, and need not search ``scores`` again.
    """
    database = store.database
    sql = (
        f"SELECT TraceId, RunId, Replica, Instance, Instance IN ({_beating(database)}) AS Beat, toFloat64(At),"
        f" CAST([], 'Array(Tuple(String, String))') AS Done FROM {database}.scoring_claims"
        " WHERE (TraceId, RunId) IN {keys:Array(Tuple(String, String))}"
    )
    if with_scores:
        sql += (
            " UNION ALL SELECT TraceId, RunId, '', '', 0, 0., groupUniqArray((toString(Rule), toString(Scorer)))"
            f" FROM {database}.scores WHERE TraceId IN {{traces:Array(String)}}"
            " AND (TraceId, RunId) IN {keys:Array(Tuple(String, String))} GROUP BY TraceId, RunId"
        )
    unique = list(dict.fromkeys(keys))
    states: dict[Key, ClaimState] = {}
    for start in range(0, len(unique), ID_BATCH // 2):  # a key is two ids
        batch = unique[start : start + ID_BATCH // 2]
        traces = sorted({trace for trace, _ in batch})
        params = {"keys": batch, "traces": traces, "ms": int(alive_within_s * 1000)}
        for trace, run, replica, instance, beat, at, done in store.internal_query(sql, params):
            state = states.setdefault((str(trace), str(run)), ClaimState())
            if replica:
                state.claimants.append(Claimant(str(replica), str(instance), bool(beat), float(at)))
            state.done.update((str(rule), str(scorer)) for rule, scorer in done)
    return states


def sessions_claimed_since_scored(
    store: Store, session_ids: Sequence[str], alive_within_s: float, claimed_within_s: float
) -> dict[str, list[Claimant]]:
    """Per session: who claimed it in the last ``claimed_within_s`` and after its latest session score.

    A session's claim is stored before its judge call, while its scoring record waits in the scored-run
    writer's buffer: a new owner reads the claim to leave a scoring under way to the replica doing it. A claim
    older than any judge call with its retries is not a scoring under way (one whose score was refused).
    """
    database = store.database
    sql = (
        f"SELECT c.RunId, c.Replica, c.Instance, c.Instance GLOBAL IN ({_beating(database)})"
        f" FROM {database}.scoring_claims AS c LEFT JOIN ("
        f"  {_session_scored(database)}"
        ") AS s ON c.RunId = s.RunId"
        " WHERE c.TraceId = '' AND c.RunId IN {ids:Array(String)} AND c.At > s.Scored"
        " AND c.At >= now64(3) - toIntervalMillisecond({within:UInt64})"
    )
    ids = sorted(set(session_ids))
    found: dict[str, list[Claimant]] = {}
    for start in range(0, len(ids), ID_BATCH):
        params = {"ids": ids[start : start + ID_BATCH], "ms": int(alive_within_s * 1000)}
        params["within"] = int(claimed_within_s * 1000)
        for session, replica, instance, beat in store.internal_query(sql, params):
            found.setdefault(str(session), []).append(Claimant(str(replica), str(instance), bool(beat)))
    return found


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A recorded scoring of a session (``session_record``): the turns it covered, and whether it still counts."""

    turns: frozenset[str]
    replica: str
    instance: str
    """Empty for a record written before claims (it counts, as it did)."""
    heartbeat: bool
    scored_after: bool
    """A session score was written at or after the record: the scoring it announced was done."""


def session_records(store: Store, session_ids: Sequence[str], alive_within_s: float) -> dict[str, list[SessionRecord]]:
    """Per session: its recorded scorings, with whether each claimant beat lately and was followed by a score."""
    database = store.database
    sql = (
        "SELECT r.RunId, r.Run, JSONExtractString(r.Run, 'replica'), JSONExtractString(r.Run, 'instance') AS Inst,"
        f" Inst IN ({_beating(database)}),"
        " r.Timestamp <= s.Scored"
        f" FROM {database}.scored_runs AS r LEFT JOIN ("
        f"  {_session_scored(database)}"
        ") AS s ON r.RunId = s.RunId"
        " WHERE r.TraceId = '' AND r.RunId IN {ids:Array(String)} AND r.Target = 'session'"
    )
    ids = sorted(set(session_ids))
    found: dict[str, list[SessionRecord]] = {}
    for start in range(0, len(ids), ID_BATCH):
        params = {"ids": ids[start : start + ID_BATCH], "ms": int(alive_within_s * 1000)}
        for session, body, replica, instance, beat, scored in store.internal_query(sql, params):
            turns = frozenset(str(turn) for turn in parse_stored_run(str(body)).get("turns") or ())
            record = SessionRecord(turns, str(replica), str(instance), bool(beat), bool(scored))
            found.setdefault(str(session), []).append(record)
    return found
