"""A fleet simulation: N replicas in one process over one store, coordinated through a real ZooKeeper.

``python -m bench.fleet --replicas 3 --json`` runs the scenario of issue #28 and prints one JSON object as its
last line:

- every replica is a whole ``Service`` (its own OTLP receiver, Keeper session, scoring stage and spool) over
  one shared embedded store, as replicas share a ClickHouse server;
- a router sends each trace to a replica by trace-id hash over the live replicas, as the Collector's
  load-balancing exporter does, so the turns of one conversation land on different replicas;
- ``--sessions`` conversations of ``--turns`` turns each, sent in rounds; a judge rule with a daily token
  budget worth ``--limit-calls`` judge calls (a fake OpenAI-compatible judge on loopback counts the calls);
- an alert on the sessions' turn counts that fires, then resolves once longer conversations come in;
- a rule change sent to one replica (``converged_s``: until every replica applied it);
- one replica killed mid-run: its Keeper session expired, its pipelines stopped without scoring what it held,
  its spool left for a successor, and the router stops sending to it.

Wanted: every session scored once with all its turns, one notification per alert transition, judge calls
within the budget, rules converged within 10 s, nothing acknowledged lost. ZooKeeper comes from Debian's
``zookeeper`` package (``--keeper host:port`` uses a running one instead). Every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiohttp import ClientSession
from opentelemetry.sdk.trace import ReadableSpan

from spanscore.config import ServiceConfig
from spanscore.fleet.config import FleetConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.alert_parts import Receiver
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_targets import rag_traces
from tests.fakes.fake_openai import FakeJudgeServer, Reply
from tests.service_setup import make_service_config
from tests.zookeeper import start_zookeeper

TOKENS_PER_CALL = 70  # the fake judge's usage: 50 in, 20 out
WAIT_S = 120.0


def rules(limit_calls: int) -> list[dict[str, Any]]:
    return [
        {"name": "conversation", "target": "session", "scorers": ["turn_count"]},
        {"name": "judged", "target": "run", "budget": {"daily_tokens": limit_calls * TOKENS_PER_CALL},
         "always": {"where": {"service.name": "support-bot"}},  # scored at rate 1 until the budget is spent
         "scorers": ["toxicity"]},
    ]  # fmt: skip


def replica_config(
    args: argparse.Namespace, index: int, base: Path, keeper: str, judge: str, hook: str
) -> ServiceConfig:
    config = make_service_config(f"chdb://{base / 'store'}", "fleet", base / f"replica-{index}")
    config.collector.runs = config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    config.collector.sessions = config.collector.sessions.model_copy(update={"quiet_period_s": args.quiet})
    config.scoring.poll_interval_s = 0.05
    config.rules = [RuleConfig.model_validate(rule) for rule in rules(args.limit_calls)]
    config.judge = {"model": "openai/judge", "api_base": judge, "timeout_s": 10}
    config.alerting = config.alerting.model_copy(update={"interval_s": 1.0})
    config.alerts = [
        config.model_validate({"alerts": [{
            "name": "short-conversations", "scorer": "turn_count", "aggregate": "mean", "below": args.turns + 0.5,
            "window": "1h", "min_samples": 3, "confidence": 0.6, "notify": [{"webhook": hook}],
        }]}).alerts[0]
    ]  # fmt: skip
    config.fleet = FleetConfig(keeper=keeper, replica=f"r{index}", session_timeout_s=2.0, turn_poll_s=0.5)
    return config


def route(spans: list[ReadableSpan], live: list[int]) -> dict[int, list[ReadableSpan]]:
    routed: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        context = span.get_span_context()
        assert context is not None
        digest = int(hashlib.sha256(f"{context.trace_id:032x}".encode()).hexdigest(), 16)
        routed.setdefault(live[digest % len(live)], []).append(span)
    return routed


async def send(replicas: list[Service], live: list[int], spans: list[ReadableSpan]) -> int:
    acknowledged = 0
    for index, part in route(spans, live).items():
        grpc = replicas[index].grpc
        assert grpc is not None
        if await asyncio.to_thread(export, grpc_exporter(grpc.port), part) == "SUCCESS":
            acknowledged += len(part)
    return acknowledged


async def query(service: Service, sql: str) -> list[Any]:
    return list(await asyncio.to_thread(service.store.internal_query, sql))


async def wait_for(check: Any, timeout_s: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(0.25)
    return False


async def scenario(args: argparse.Namespace, base: Path, keeper: str) -> dict[str, Any]:
    judge = FakeJudgeServer(default_reply=Reply.json({"verdicts": [{"verdict": "no", "reason": "polite"}]}))
    await judge.start()
    receiver = Receiver()  # a webhook on loopback that keeps every alert notification
    await receiver.start()
    hook = receiver.url
    replicas = [Service(replica_config(args, i, base, keeper, judge.base_url, hook)) for i in range(args.replicas)]
    for service in replicas:
        await service.start()
    live = list(range(args.replicas))
    try:
        await wait_for(lambda: _joined(replicas))
        sent_turns: dict[str, int] = {}
        acknowledged = 0
        victim = args.replicas - 1
        killing: asyncio.Task[None] | None = None
        for turn in range(args.turns):
            spans: list[ReadableSpan] = []
            for session in range(args.sessions):
                spans += rag_traces(1, session=f"conv-{session}", first=session * 1000 + turn)
                sent_turns[f"conv-{session}"] = turn + 1
            acknowledged += await send(replicas, live, spans)
            if turn == args.turns // 2 and args.replicas > 1:
                await asyncio.sleep(min(1.0, args.quiet / 2))  # its runs of this round are ready and stored
                live.remove(victim)
                killing = asyncio.create_task(kill(replicas[victim]))  # the pod dies while traffic goes on
            await asyncio.sleep(0.3)
        if killing is not None:
            await killing
        rule_change = await change_rules(replicas[0], [replicas[i] for i in live], args.limit_calls)
        survivor = replicas[live[0]]
        await wait_for(lambda: _all_sessions_scored(survivor, args.sessions), timeout_s=args.quiet * 4 + WAIT_S)
        await asyncio.sleep(args.quiet + 2.0)  # a second scoring, were one to happen, lands by now
        sessions = await session_outcomes(survivor, sent_turns)
        # Longer conversations bring the mean back: the alert resolves.
        longer: list[ReadableSpan] = []
        for session in range(args.sessions, args.sessions + 3 * args.sessions):
            longer += rag_traces(args.turns + 3, session=f"conv-{session}", first=session * 1000)
        acknowledged += await send(replicas, live, longer)
        await wait_for(lambda: _resolved(receiver), timeout_s=args.quiet * 4 + WAIT_S)
        await asyncio.sleep(1.0)  # a repeated notification, were one sent, arrives by now
        stored = int((await query(survivor, "SELECT uniqExact(SpanId) FROM otel_traces"))[0][0])
        transitions = len({(e.get("transition_id"), e.get("status")) for e in receiver.bodies})
        return {
            "replicas": args.replicas,
            "sessions": sessions,
            "alerts": {"transitions": transitions, "notifications": len(receiver.bodies)},
            "budget": {"limit_calls": args.limit_calls, "judge_calls": len(judge.requests)},
            "rules": {"converged_s": rule_change},
            "replica_kill": {
                "acknowledged_lost": max(0, acknowledged - stored),
                "sessions_lost": args.sessions - sessions["scored_once_with_all_turns"],
            },
        }
    finally:
        for index in live:
            await replicas[index].shutdown()
        await receiver.stop()
        await judge.stop()


async def _joined(replicas: list[Service]) -> bool:
    return all(s.fleet is not None and len(s.fleet.fleet.members()) == len(replicas) for s in replicas)


async def kill(service: Service) -> None:
    """Keeper expires the replica's session; its pipelines stop without scoring what it held in memory."""
    assert service.fleet is not None and service.live is not None
    service.fleet.fleet.expire()
    service.live.sessions.release(lambda _: False)
    await service.shutdown()


async def change_rules(target: Service, everyone: list[Service], limit_calls: int) -> float:
    new = {
        "rules": [*rules(limit_calls), {"name": "extra", "target": "run", "sample": 0.0, "scorers": ["completeness"]}]
    }
    assert target.api is not None
    async with ClientSession() as http:
        started = time.monotonic()
        async with http.put(f"http://127.0.0.1:{target.api.port}/api/v1/rules", json=new) as response:
            if response.status != 200:
                raise RuntimeError(f"rule change refused: {response.status} {await response.text()}")
            version = (await response.json())["version"]

    async def converged() -> bool:
        return all(s.rule_control.rule_set.version == version for s in everyone)

    await wait_for(converged, timeout_s=60)
    return round(time.monotonic() - started, 3)


async def _all_sessions_scored(service: Service, count: int) -> bool:
    sql = "SELECT uniqExact(RunId) FROM scores FINAL WHERE Scorer = 'turn_count'"
    return int((await query(service, sql))[0][0]) >= count


async def _resolved(receiver: Receiver) -> bool:
    return any(event.get("status") == "resolved" for event in receiver.bodies)


async def session_outcomes(service: Service, sent: dict[str, int]) -> dict[str, int]:
    scores = dict(await query(service, "SELECT RunId, Score FROM scores FINAL WHERE Scorer = 'turn_count'"))
    decided = dict(await query(
        service, "SELECT RunId, count() FROM score_decisions WHERE Target = 'session' AND Rule = 'conversation'"
        " GROUP BY RunId"
    ))  # fmt: skip
    once = sum(1 for s, turns in sent.items() if scores.get(s) == float(turns) and decided.get(s) == 1)
    wrong = {
        s: (scores.get(s), decided.get(s))
        for s, turns in sent.items()
        if (scores.get(s), decided.get(s)) != (float(turns), 1)
    }
    if wrong:
        print("sessions not scored once with every turn (turn_count, decisions):", wrong, file=sys.stderr)
    return {"sent": len(sent), "scored_once_with_all_turns": once, "partial_or_duplicate": len(sent) - once}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--limit-calls", type=int, default=40)
    parser.add_argument("--quiet", type=float, default=8.0, help="sessions' quiet period, seconds")
    parser.add_argument("--keeper", default="", help="host:port of a running ZooKeeper or Keeper")
    parser.add_argument("--json", action="store_true", help="print only the result object")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="spanscore-fleet-") as directory:
        base = Path(directory)
        server = None if args.keeper else start_zookeeper(base / "zookeeper")
        keeper = args.keeper or (server.hosts if server is not None else "")
        try:
            result = asyncio.run(scenario(args, base, f"{keeper}"))
        finally:
            if server is not None:
                server.stop()
    if not args.json:
        print(json.dumps(result, indent=2), file=sys.stderr)
    print(json.dumps(result))
    wanted = (
        result["sessions"]["partial_or_duplicate"] == 0
        and result["alerts"]["notifications"] == result["alerts"]["transitions"]
        and result["budget"]["judge_calls"] <= result["budget"]["limit_calls"]
        and result["rules"]["converged_s"] <= 10
        and result["replica_kill"] == {"acknowledged_lost": 0, "sessions_lost": 0}
    )
    return 0 if wanted else 1


if __name__ == "__main__":
    sys.exit(main())
