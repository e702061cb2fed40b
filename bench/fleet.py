"""A fleet under the faults operators meet: real ``spanscore serve`` replicas, a real ZooKeeper, one shared store.

``python -m bench.fleet --replicas 3 --json`` runs each scenario on a fresh fleet (its own database and
fleet path) and prints one JSON object as its last line. Runs from ``pip install -e .``: no pytest needed.

- every replica is a ``spanscore serve`` child process (bench/fleet_parts.py) with its own OTLP receivers,
  Keeper session and spool, over one store: a ClickHouse stand-in that serves the server protocol from chDB;
- a router sends each trace to a replica by trace-id hash over the replicas it sends to, as the Collector's
  load-balancing exporter does, so the turns of one conversation land on different replicas; a refused
  export is sent again over the replicas still up (at most ``SEND_ATTEMPTS`` times), as the Collector retries;
- ``--sessions`` conversations of ``--turns`` turns, sent in rounds; a judge rule with a daily token budget
  worth ``--limit-calls`` judge calls; an alert on the sessions' mean turn count that fires, then resolves
  once three times as many longer conversations come in.

The fault comes mid-run, while traffic keeps coming:

- ``kill``: one replica gets ``kill -9`` while a round is being sent to it (nothing drained or flushed);
- ``partition``: one replica's Keeper connection is cut for ``--cut`` seconds (its session expires);
- ``pause``: one replica is stopped with SIGSTOP for ``--cut`` seconds (traffic goes around it), then continued;
- ``join``: a new replica joins;
- ``rolling``: each replica in turn is replaced by one with a new name (start the new, SIGTERM the old).

Per scenario: sessions scored again without a new turn (a continued session scored again over its new turns
is counted apart) and without all their turns, runs judged more than once,
judge calls per replica against the limit, notifications per alert transition, acknowledged spans lost.
Exit 0 only when every scenario keeps every promise. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from bench.fleet_parts import TOKENS_PER_CALL, Judge, KeeperLink, Replica
from spanscore.storage.connection import connect
from spanscore.testing import clickhouse_standin
from spanscore.testing.otlp import export, grpc_exporter
from spanscore.testing.traces import rag_traces
from spanscore.testing.webhook import Receiver
from spanscore.testing.zookeeper import start_zookeeper

SCENARIOS = ("kill", "partition", "pause", "join", "rolling", "outage")
USERS = Path(__file__).resolve().parents[1] / "deploy" / "clickhouse"
START_S = 120.0
SEND_ATTEMPTS = 5


@dataclass
class Fleet:
    """One scenario's world: its replicas, what was sent and acknowledged, and where it is stored."""

    name: str
    args: argparse.Namespace
    base: Path
    zookeeper_port: int
    dsn: str
    judge: Judge
    receiver: Receiver
    database: str
    replicas: list[Replica] = field(default_factory=list)
    sending: list[Replica] = field(default_factory=list)
    acknowledged: set[str] = field(default_factory=set)
    sent_turns: dict[str, int] = field(default_factory=dict)
    generation: int = 0

    def settings(self) -> dict[str, Any]:
        args = self.args
        alert = {
            "name": "short-conversations", "scorer": "turn_count", "aggregate": "mean",
            "below": args.turns + args.replicas + 0.5, "window": "1h", "min_samples": 3, "confidence": 0.6,
            "notify": [{"webhook": self.receiver.url}],
        }  # fmt: skip
        return {
            # max_wait_s bounds how long a lost replica's half-assembled runs wait for their survivors.
            "collector": {"runs": {"quiet_period_s": 0.2, "max_wait_s": 10.0},
                          "sessions": {"quiet_period_s": args.quiet}},
            "storage": {"dsn": self.dsn, "database": self.database, "migrate": False, "acknowledge": "stored",
                        "query_allow_writable": True},
            "scoring": {"poll_interval_s": 0.05},
            "alerting": {"interval_s": 1.0},
            "alerts": [alert],
            "rules": [
                {"name": "conversation", "target": "session", "scorers": ["turn_count"]},
                {"name": "judged", "target": "run", "budget": {"daily_tokens": args.limit_calls * TOKENS_PER_CALL},
                 "always": {"where": {"service.name": "support-bot"}}, "scorers": ["toxicity"]},
            ],
            "fleet": {"path": f"/bench-{self.name}", "session_timeout_s": 2.0, "turn_poll_s": 0.5},
        }  # fmt: skip

    async def add(self) -> Replica:
        """Start one more replica under a new name; it receives traffic once it answers /healthz."""
        self.generation += 1
        name = f"{self.name}-{self.generation}"
        link = KeeperLink(self.zookeeper_port)
        await link.start()
        replica = Replica(name, self.base / name, link)
        settings = self.settings()
        settings["judge"] = {"model": "openai/judge", "api_base": self.judge.url(name), "timeout_s": 10}
        replica.start(settings)
        self.replicas.append(replica)
        if not await replica.ready(START_S):
            raise RuntimeError(f"replica {name} did not start:\n{replica.log_tail()}")
        self.sending.append(replica)
        return replica

    async def send(self, spans: list[ReadableSpan]) -> None:
        """Route each trace to a replica by trace-id hash and keep the ids of every acknowledged span.

        A refused export (its replica killed mid-request) is sent again over the replicas still up, as the
        Collector's retry does: a turn nobody acknowledged is the client's to resend, and the bench counts
        every turn it sent.
        """
        pending = spans
        for attempt in range(SEND_ATTEMPTS):
            targets = [replica for replica in self.sending if replica.alive]
            if attempt:
                await asyncio.sleep(1.0)
            if not pending or not targets:
                return
            routed: dict[int, list[ReadableSpan]] = {}
            for span in pending:
                context = span.get_span_context()
                assert context is not None
                digest = int(hashlib.sha256(f"{context.trace_id:032x}".encode()).hexdigest(), 16)
                routed.setdefault(digest % len(targets), []).append(span)
            parts = list(routed.items())
            done = await asyncio.gather(*(self._export(targets[index], part) for index, part in parts))
            pending = [span for (_, part), ok in zip(parts, done, strict=True) if not ok for span in part]

    async def _export(self, replica: Replica, part: list[ReadableSpan]) -> bool:
        if await asyncio.to_thread(export, grpc_exporter(replica.grpc), part) != "SUCCESS":
            return False
        self.acknowledged.update(f"{s.get_span_context().span_id:016x}" for s in part)  # type: ignore[union-attr]
        return True

    def round(self, sessions: range, turns: int = 1) -> list[ReadableSpan]:
        """The next ``turns`` turns of each session (its runs numbered, so the judge tells them apart)."""
        spans: list[ReadableSpan] = []
        offset = SCENARIOS.index(self.name) * 1_000_000 if self.name in SCENARIOS else 0
        for session in sessions:
            key = f"conv-{self.name}-{session}"
            start = self.sent_turns.get(key, 0)
            spans += rag_traces(turns, session=key, first=offset + session * 1000 + start, numbered=True)
            self.sent_turns[key] = start + turns
        return spans

    def query(self, sql: str) -> list[Any]:
        client = connect(self.dsn, self.database)
        client.database = self.database  # a server connection starts in default (the database may not exist yet)
        try:
            return list(client.query(sql).result_rows)
        finally:
            client.close()

    async def stop(self) -> None:
        await asyncio.gather(*(replica.stop() for replica in self.replicas))
        for replica in self.replicas:
            await replica.link.stop()


async def wait_for(check: Callable[[], Awaitable[bool]], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(0.5)
    return False


# -- the faults ---------------------------------------------------------------------------------------------


async def kill(fleet: Fleet, send_round: Callable[[], Awaitable[None]]) -> None:
    """kill -9 while a round goes to the victim too; the router drops it once its exports fail."""
    victim = fleet.sending[-1]
    await asyncio.gather(send_round(), victim.kill())
    fleet.sending.remove(victim)


async def partition(fleet: Fleet, send_round: Callable[[], Awaitable[None]]) -> None:
    victim = fleet.sending[-1]
    victim.link.sever()
    await send_round()
    await asyncio.sleep(fleet.args.cut)  # longer than the session timeout: Keeper expires the victim
    victim.link.heal()


async def pause(fleet: Fleet, send_round: Callable[[], Awaitable[None]]) -> None:
    """SIGSTOP for ``--cut`` seconds; the router sends around it meanwhile (as a failed readiness probe
    would), then to it again after SIGCONT."""
    victim = fleet.sending[-1]
    victim.signal(signal.SIGSTOP)
    fleet.sending.remove(victim)
    started = time.monotonic()
    await send_round()
    await asyncio.sleep(max(0.0, fleet.args.cut - (time.monotonic() - started)))
    victim.signal(signal.SIGCONT)
    fleet.sending.append(victim)


async def outage(fleet: Fleet, send_round: Callable[[], Awaitable[None]]) -> None:
    """Keeper unreachable from every replica for ``--cut`` seconds (a Keeper restart, a network fault in front of
    it): every session expires, and every replica rejoins under a new token while traffic keeps coming."""
    for replica in fleet.sending:
        replica.link.sever()
    await send_round()
    await asyncio.sleep(fleet.args.cut)
    for replica in fleet.sending:
        replica.link.heal()


async def join(fleet: Fleet, send_round: Callable[[], Awaitable[None]]) -> None:
    await asyncio.gather(send_round(), fleet.add())


async def rolling(fleet: Fleet, send_round: Callable[[], Awaitable[None]]) -> None:
    """Each replica replaced by one with a new name: the new one ready first, then SIGTERM to the old."""
    for old in list(fleet.sending):
        await fleet.add()
        fleet.sending.remove(old)
        await asyncio.gather(send_round(), old.stop())


FAULTS: dict[str, Callable[[Fleet, Callable[[], Awaitable[None]]], Awaitable[None]]] = {
    "kill": kill, "partition": partition, "pause": pause, "join": join, "rolling": rolling, "outage": outage,
}  # fmt: skip


# -- one scenario ---------------------------------------------------------------------------------------------


async def scenario(fleet: Fleet) -> dict[str, Any]:
    args = fleet.args
    await asyncio.gather(*(fleet.add() for _ in range(args.replicas)))
    sessions = range(args.sessions)
    for turn in range(args.turns):
        if turn == args.turns // 2:  # each round the fault sends is one more turn of every session
            await FAULTS[fleet.name](fleet, lambda: fleet.send(fleet.round(sessions)))
        else:
            await fleet.send(fleet.round(sessions))
    settle = args.quiet * 4 + 60
    await wait_for(lambda: _scored_with_all_turns(fleet), settle)
    await _settled(fleet, args.quiet + 3)
    outcome = session_outcomes(fleet)
    # Longer conversations bring the mean turn count back above the threshold: the alert resolves.
    await fleet.send(fleet.round(range(args.sessions, 4 * args.sessions), turns=args.turns + args.replicas + 4))
    await wait_for(lambda: _resolved(fleet.receiver), settle)
    await _settled(fleet, args.quiet + 3)
    return {**outcome, **judged(fleet), "alerts": notifications(fleet.receiver), "acknowledged_lost": lost(fleet)}


async def _scored_with_all_turns(fleet: Fleet) -> bool:
    scores = dict(await asyncio.to_thread(fleet.query, _TURN_COUNTS.format(name=fleet.name)))
    return all(scores.get(session) == float(turns) for session, turns in fleet.sent_turns.items())


async def _settled(fleet: Fleet, quiet_s: float) -> None:
    """Until no new score or decision has been written for ``quiet_s`` (a second scoring lands by then)."""
    sql = "SELECT (SELECT count() FROM scores) + (SELECT count() FROM score_decisions)"
    last, since = -1, time.monotonic()
    deadline = time.monotonic() + quiet_s * 10 + 60
    while time.monotonic() < deadline:
        count = int((await asyncio.to_thread(fleet.query, sql))[0][0])
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        await asyncio.sleep(0.5)


async def _resolved(receiver: Receiver) -> bool:
    return any(body.get("status") == "resolved" for body in receiver.bodies)


_TURN_COUNTS = "SELECT RunId, Score FROM scores FINAL WHERE Scorer = 'turn_count' AND startsWith(RunId, 'conv-{name}-')"


def session_outcomes(fleet: Fleet) -> dict[str, Any]:
    """Each session's scorings and its final turn count; a scoring repeats when it covered no new turn.

    A session continued after it was scored (a fault's gap longer than the quiet period) is rightly scored
    again over its new turns: that second scoring is counted apart (``rescored_for_new_turns``). What the
    fleet must never do is score again what was scored already: a scoring whose turns (its ``session_record``,
    written before the judge) all lie in earlier scorings, or a decision written without a record.
    Merges are stopped, so every decision and record counts.
    """
    scores = dict(fleet.query(_TURN_COUNTS.format(name=fleet.name)))
    decisions: dict[str, list[str]] = dict(fleet.query(
        "SELECT RunId, groupArray(concat(toString(Timestamp), ' ', toString(Decision))) FROM (SELECT * FROM"
        " score_decisions WHERE Target = 'session' AND Rule = 'conversation'"
        f" AND startsWith(RunId, 'conv-{fleet.name}-') ORDER BY Timestamp) GROUP BY RunId"
    ))  # fmt: skip
    decided = {session: len(rows) for session, rows in decisions.items()}
    records: dict[str, list[tuple[str, str]]] = {}
    for session, body, stamp in fleet.query(
        "SELECT RunId, Run, toString(Timestamp) FROM scored_runs WHERE Target = 'session' AND TraceId = ''"
        f" AND startsWith(RunId, 'conv-{fleet.name}-') ORDER BY Timestamp"
    ):
        records.setdefault(session, []).append((body, stamp))
    sent = fleet.sent_turns
    repeats = {s: _repeats([body for body, _ in records.get(s, [])], decided.get(s, 0)) for s in sent}
    return {
        # Who scored each repeated session, when, over how many turns: what a broken promise is traced from.
        "repeated": {
            s: {
                "decisions": list(decisions.get(s, [])),
                "records": [_record(body, stamp) for body, stamp in records.get(s, [])],
            }
            for s in sent
            if repeats[s]
        },
        "sessions": {
            "sent": len(sent),
            "with_all_turns_never_repeated": sum(1 for s, n in sent.items() if scores.get(s) == n and not repeats[s]),
            "scored_again_without_new_turns": sum(1 for s in sent if repeats[s]),
            "rescored_for_new_turns": sum(1 for s in sent if not repeats[s] and decided.get(s, 0) > 1),
            "without_all_turns": sum(1 for s, n in sent.items() if scores.get(s) != float(n)),
        },
    }


def _repeats(bodies: list[str], decisions: int) -> int:
    """Scorings that covered no turn an earlier one had not (records in time order), plus decisions beyond
    the records (a scoring nothing recorded: what it covered is unknown, so it counts as a repeat)."""
    seen: set[str] = set()
    repeated = 0
    for body in bodies:
        turns = set(json.loads(body).get("turns") or ())
        repeated += 1 if turns <= seen else 0
        seen |= turns
    return repeated + max(0, decisions - max(len(bodies), 1))


def _record(body: str, stamp: str) -> str:
    record = json.loads(body)
    return (
        f"{stamp} {record.get('replica', '?')}/{record.get('instance', '?')[:8]} turns={len(record.get('turns') or ())}"
    )


def judged(fleet: Fleet) -> dict[str, Any]:
    per_replica = {replica.name: fleet.judge.calls[replica.name] for replica in fleet.replicas}
    return {
        "runs_judged": len(fleet.judge.answers),
        "runs_judged_more_than_once": sum(1 for count in fleet.judge.answers.values() if count > 1),
        "judge": {
            "limit_calls": fleet.args.limit_calls,
            "calls": sum(per_replica.values()),
            "per_replica": per_replica,
        },
    }


def notifications(receiver: Receiver) -> dict[str, Any]:
    per: dict[str, int] = {}
    for body in receiver.bodies:
        key = f"{body.get('status')}:{body.get('transition_id')}"
        per[key] = per.get(key, 0) + 1
    return {"transitions": len(per), "notifications": len(receiver.bodies), "per_transition": per}


def lost(fleet: Fleet) -> int:
    if not fleet.acknowledged:
        return 0
    ids = ", ".join(f"'{span_id}'" for span_id in sorted(fleet.acknowledged))
    stored = int(fleet.query(f"SELECT uniqExact(SpanId) FROM otel_traces WHERE SpanId IN ({ids})")[0][0])
    return len(fleet.acknowledged) - stored


def kept_every_promise(result: dict[str, Any]) -> bool:
    sessions, judge, alerts = result["sessions"], result["judge"], result["alerts"]
    return (
        sessions["with_all_turns_never_repeated"] == sessions["sent"]
        and result["runs_judged_more_than_once"] == 0
        and judge["calls"] <= judge["limit_calls"]
        and alerts["notifications"] == alerts["transitions"] == 2
        and result["acknowledged_lost"] == 0
    )


# -- the run ---------------------------------------------------------------------------------------------------


async def run(args: argparse.Namespace, base: Path, zookeeper_port: int, dsn: str) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in args.scenarios:
        judge, receiver = Judge(), Receiver()
        await judge.start()
        await receiver.start()
        fleet = Fleet(name, args, base / name, zookeeper_port, dsn, judge, receiver, f"bench_{name}")
        started = time.monotonic()
        try:
            await asyncio.to_thread(_migrate, fleet)
            results[name] = await scenario(fleet)
        except Exception as exc:  # a scenario that could not run is reported, and the others still run
            results[name] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
        finally:
            await fleet.stop()
            await receiver.stop()
            await judge.stop()
        results[name]["seconds"] = round(time.monotonic() - started, 1)
        results[name]["kept_every_promise"] = "error" not in results[name] and kept_every_promise(results[name])
        print(f"{name}: {json.dumps(results[name])}", file=sys.stderr, flush=True)
    return {"replicas": args.replicas, "scenarios": results}


def _migrate(fleet: Fleet) -> None:
    """The schema once, as a deployment's migrate Job does; merges stopped so that every copy of a score,
    a decision and a session's scoring record counts."""
    from spanscore.storage.schema.migrations import migrate

    client = connect(fleet.dsn, fleet.database)
    try:
        migrate(client, fleet.database)
        for table in ("scores", "score_decisions", "scored_runs"):
            client.command(f"SYSTEM STOP MERGES {fleet.database}.{table}")
    finally:
        client.close()


def _keep_logs(base: Path, target: Path) -> None:
    """Each replica's log, under its scenario and replica directory names."""
    for log in base.glob("*/**/serve.log"):
        copy = target / log.relative_to(base)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, copy)
    print(f"replica logs kept under {target}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=12)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--limit-calls", type=int, default=40)
    parser.add_argument("--quiet", type=float, default=6.0, help="sessions' quiet period, seconds")
    parser.add_argument("--cut", type=float, default=10.0, help="how long a partition or a pause lasts, seconds")
    parser.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--json", action="store_true", help="print only the result object")
    parser.add_argument(
        "--keep-logs",
        type=Path,
        metavar="DIR",
        help="copy every replica's serve.log here at the end, so a broken promise can be traced",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="spanscore-fleet-") as directory:
        base = Path(directory)
        zookeeper = start_zookeeper(base / "zookeeper")
        store, port = clickhouse_standin.spawn(str(base / "clickhouse"), str(USERS / "owner-user.sql"))
        try:
            dsn = f"clickhouse://spanscore_owner:CHANGE-ME@127.0.0.1:{port}/"
            result = asyncio.run(run(args, base, zookeeper.port, dsn))
        finally:
            clickhouse_standin.stop(store)
            zookeeper.stop()
            if args.keep_logs is not None:
                _keep_logs(base, args.keep_logs)
    if not args.json:
        print(json.dumps(result, indent=2), file=sys.stderr)
    print(json.dumps(result))
    return 0 if all(r["kept_every_promise"] for r in result["scenarios"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
