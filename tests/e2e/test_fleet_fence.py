"""Ownership is fenced: a replica cut from Keeper, a joining one, one with a taken name, one stopping on SIGTERM.

Whole ``Service`` replicas over one store and a real ZooKeeper, as in ``test_fleet``; a replica is cut from
Keeper by a loopback proxy that drops its traffic. The figure that matters is how many times each session was
decided (a second decision is a second judge bill): it must be once, with every turn.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet
from spanscore.server.service import Service
from spanscore.storage.scored_runs import ScoredRunRow
from spanscore.storage.scores import ScoreRow, score_id
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_fleet import _all_joined, configure, conversations, query, send, session_scores, until
from tests.e2e.test_targets import SESSION_RULE, rag_traces
from tests.service_setup import make_service_config, new_database_name
from tests.tcp_proxy import PartitionProxy
from tests.zookeeper import ZooKeeperServer

TIMEOUT_S = 2.0
StartReplica = Callable[..., Awaitable[Service]]


@pytest.fixture
async def start_replica(chdb_dsn: str, zookeeper: ZooKeeperServer, tmp_path: Path) -> AsyncIterator[StartReplica]:
    """Start replicas of one fleet over one database; ``proxy`` puts a cuttable proxy before its Keeper."""
    database = new_database_name()
    keeper = zookeeper.chroot()
    chroot = keeper[len(zookeeper.hosts) :]
    running: list[Service] = []
    proxies: list[PartitionProxy] = []

    async def start(
        index: int,
        *,
        quiet_s: float,
        runs: dict[str, float] | None = None,
        proxy: PartitionProxy | None = None,
        rules: list[dict[str, Any]] | None = None,
    ) -> Service:
        config = make_service_config(chdb_dsn, database, tmp_path / f"replica-{index}")
        configure(config, rules or [SESSION_RULE], quiet_s)
        if runs:
            config.collector.runs = config.collector.runs.model_copy(update=runs)
        address = f"127.0.0.1:{proxy.port}{chroot}" if proxy is not None else keeper
        if proxy is not None:
            proxies.append(proxy)
        config.fleet = FleetConfig(keeper=address, replica=f"r{index}", session_timeout_s=TIMEOUT_S, turn_poll_s=0.5)
        service = Service(config)
        await service.start()
        running.append(service)
        return service

    yield start
    for service in running:
        await service.shutdown()
    for proxy in proxies:
        proxy.close()


async def decided_once_with_every_turn(replicas: list[Service], sessions: int, turns: int) -> dict[str, Any]:
    """Wait until every session is scored, then a while longer for any second scoring; what was found."""

    async def all_scored() -> bool:
        return len(await session_scores(replicas[0])) == sessions

    await until(all_scored, timeout_s=40)
    await asyncio.sleep(3.0)  # a second decision, were a replica to make one, lands by now
    found = await session_scores(replicas[0])
    return {session: result for session, result in found.items() if result != (float(turns), 1)}


async def test_a_replica_cut_from_keeper_scores_no_session_its_new_owners_score(
    start_replica: StartReplica, zookeeper: ZooKeeperServer
) -> None:
    proxy = PartitionProxy(zookeeper.host, zookeeper.port)
    replicas = [await start_replica(0, quiet_s=2.5, proxy=proxy)]
    replicas += [await start_replica(index, quiet_s=2.5) for index in (1, 2)]
    await until(lambda: _all_joined(replicas, 3))
    await send(replicas, conversations(9, 3))
    proxy.cut()  # r0 keeps its listeners and its store; only Keeper is out of reach, for longer than its timeout
    await asyncio.sleep(3 * TIMEOUT_S)
    proxy.heal()
    assert await decided_once_with_every_turn(replicas, 9, 3) == {}  # no session scored twice, none partly
    cut = replicas[0]
    assert cut.fleet is not None and cut.fleet.fleet.session_losses >= 1  # Keeper did end its session


async def test_a_run_a_cut_replica_still_holds_is_not_scored_again_once_another_took_it_up(
    start_replica: StartReplica, zookeeper: ZooKeeperServer
) -> None:
    """A replica cut from Keeper keeps its OTLP and its store, and the runs it was assembling. Once Keeper ended
    its session, the others take those runs up from the store (a lost replica's orphans) and score them. Before,
    the cut replica then scored them too when they became ready there: a second judge bill. Its slower readiness
    (a quiet period of 12 s against the others' 1 s) stands for a replica paused or slowed for that long."""
    rules = [{"name": "answers", "scorers": ["completeness"]}]
    proxy = PartitionProxy(zookeeper.host, zookeeper.port)
    cut = await start_replica(0, quiet_s=1.0, proxy=proxy, rules=rules, runs={"quiet_period_s": 12.0})
    other = await start_replica(1, quiet_s=1.0, rules=rules, runs={"quiet_period_s": 1.0, "max_wait_s": 2.0})
    await until(lambda: _all_joined([cut, other], 2))
    spans = rag_traces(1, first=900)
    assert await asyncio.to_thread(export, grpc_exporter(cut.grpc.port if cut.grpc else 0), spans) == "SUCCESS"
    proxy.cut()

    async def decided(count: int) -> bool:
        rows = await query(other, "SELECT count() FROM score_decisions WHERE Rule = 'answers'")
        return int(rows[0][0]) >= count

    await until(lambda: decided(1), timeout_s=30)  # the other replica took the run up and decided it
    await asyncio.sleep(14.0)  # past the cut replica's own readiness (12 s after the spans came)
    proxy.heal()
    assert await query(other, "SELECT count() FROM score_decisions WHERE Rule = 'answers'") == [(1,)]
    assert await query(other, "SELECT count() FROM scores WHERE Rule = 'answers'") == [(1,)]
    assert cut.live is not None and cut.live.dispatcher.gate.runs_fenced == 1


async def test_a_joining_replica_does_not_score_finished_sessions_again(start_replica: StartReplica) -> None:
    replicas = [await start_replica(index, quiet_s=1.0) for index in (0, 1)]
    await until(lambda: _all_joined(replicas, 2))
    await send(replicas, conversations(12, 2))
    assert await decided_once_with_every_turn(replicas, 12, 2) == {}
    replicas.append(await start_replica(2, quiet_s=1.0))
    await until(lambda: _all_joined(replicas, 3))
    assert await decided_once_with_every_turn(replicas, 12, 2) == {}  # the joiner owns some; it rescored none
    joined = replicas[2]
    assert joined.live is not None and joined.fleet is not None and joined.fleet.member is not None
    # Not even taken up: its recovery at start read the turns its peers stored, and took them for unhandled
    # (a session rule decides no run), so their sessions came back and only the fence's records stopped them.
    assert joined.live.sessions.stats.sessions_ready == 0, joined.fleet.member.metrics()


UNSAMPLED = [{"name": "answers", "sample": 0.0, "scorers": ["completeness"]}]
"""Every run decided (not sampled) by each replica that assembles it: a second decision is a second row."""
SLOW_RUNS = {"quiet_period_s": 4.0}
DECISIONS = "SELECT count() FROM score_decisions WHERE Rule = 'answers'"


async def _holding_three_runs(start_replica: StartReplica, first_trace: int) -> Service:
    """A lone replica that stored three traces and holds their runs, unready (its quiet period is long)."""
    replica = await start_replica(0, quiet_s=1.0, rules=UNSAMPLED, runs=SLOW_RUNS)
    await until(lambda: _all_joined([replica], 1))
    live = replica.live
    assert live is not None and replica.grpc is not None
    spans = rag_traces(3, first=first_trace)
    assert await asyncio.to_thread(export, grpc_exporter(replica.grpc.port), spans) == "SUCCESS"

    async def holding() -> bool:
        return live.assembler.stats.pending_traces == 3

    await until(holding, timeout_s=10)
    assert await query(replica, DECISIONS) == [(0,)]
    return replica


async def _decided(replica: Service, count: int) -> None:
    async def enough() -> bool:
        return int((await query(replica, DECISIONS))[0][0]) >= count

    await until(enough, timeout_s=20)


async def test_a_joining_replica_does_not_decide_runs_a_live_replica_is_still_assembling(
    start_replica: StartReplica,
) -> None:
    """A process alone recovers, at start, the stored traces of the last minutes whose runs were not handled. A
    joining fleet replica did the same over the fleet's shared store: it took up the runs a live replica was
    still assembling and decided them too (a second decision; partial runs, when it lacked their later spans).
    It now waits, as for a lost replica, until every live replica has had ``max_wait_s`` to decide what it held."""
    first = await _holding_three_runs(start_replica, 700)
    joiner = await start_replica(1, quiet_s=1.0, rules=UNSAMPLED, runs=SLOW_RUNS)
    await until(lambda: _all_joined([first, joiner], 2))
    await _decided(first, 3)
    await asyncio.sleep(SLOW_RUNS["quiet_period_s"] + 2.0)  # the joiner's own quiet period, had it taken them up
    assert await query(first, DECISIONS) == [(3,)]
    assert joiner.live is not None and joiner.live.assembler.stats.runs_ready == 0


async def test_a_replica_alone_in_its_fleet_recovers_the_runs_it_stopped_with_at_once(
    start_replica: StartReplica,
) -> None:
    """The whole fleet stopped (here, its one replica) with runs unready: no survivor takes them up, so the
    replica that starts next does, as soon as it joined and found itself alone."""
    first = await _holding_three_runs(start_replica, 800)
    await first.shutdown()  # a stop before the runs were ready: they are stored, not decided
    again = await start_replica(0, quiet_s=1.0, rules=UNSAMPLED, runs=SLOW_RUNS)
    await _decided(again, 3)  # within the quiet period after the take-up, far short of max_wait_s (60 s)
    assert again.fleet is not None and again.fleet.member is not None
    assert again.fleet.member.metrics()["fleet_traces_recovered_at_join"] == 3


async def test_sigterm_hands_unready_runs_and_open_sessions_over(start_replica: StartReplica) -> None:
    runs = {"quiet_period_s": 1.0}  # the runs are still being assembled when the stop comes
    replicas = [await start_replica(index, quiet_s=3.0, runs=runs) for index in (0, 1)]
    await until(lambda: _all_joined(replicas, 2))
    await send(replicas, conversations(6, 3))
    leaving, staying = replicas
    live = leaving.live
    assert live is not None

    async def assembling() -> bool:  # stored batches reach the assembler on its own thread, a moment later
        return live.assembler.stats.pending_traces > 0

    await until(assembling, timeout_s=10)
    await leaving.shutdown()  # what SIGTERM runs (spanscore.server.running)
    assert await decided_once_with_every_turn([staying], 6, 3) == {}  # every turn, once, with no second scoring
    assert staying.fleet is not None and staying.fleet.member is not None
    assert staying.fleet.member.handed_over_traces > 0
    assert staying.fleet.member.orphan_traces_taken == 0  # handed over, not orphaned: counted once, apart


async def test_a_judge_score_without_a_price_does_not_stop_a_survivor_taking_sessions_up(
    start_replica: StartReplica,
) -> None:
    """A score whose judge litellm could not price stores CostUsd NULL. A replica sizes its budget shares from
    today's spend when the members change, before it takes anything up; that read failed on the NULL at every
    round, so a survivor never took a leaving replica's sessions and runs up (bench.fleet's pause, partition and
    rolling runs: sessions short of turns, or scored twice once a turn came)."""
    rules = [SESSION_RULE, {"name": "budgeted", "scorers": ["completeness"], "sample": 0.0,
                            "budget": {"daily_tokens": 10_000}}]  # fmt: skip
    runs = {"quiet_period_s": 1.0}
    replicas = [await start_replica(index, quiet_s=3.0, runs=runs, rules=rules) for index in (0, 1)]
    await until(lambda: _all_joined(replicas, 2))
    leaving, staying = replicas
    await asyncio.to_thread(staying.store.insert_scores_sync, [_unpriced_score("budgeted")])
    await send(replicas, conversations(6, 3))
    await leaving.shutdown()
    assert await decided_once_with_every_turn([staying], 6, 3) == {}
    assert staying.fleet is not None and staying.fleet.member is not None
    assert staying.fleet.member.poll_failures == 0


def _unpriced_score(rule: str) -> ScoreRow:
    """A judge score stored today whose cost is unknown (NULL), as one litellm cannot price is."""
    trace_id, now = "f" * 32, time.time_ns()
    return ScoreRow(
        score_id=score_id(rule, "answer_relevancy", "1", trace_id, trace_id[:16]), run_timestamp_ns=now,
        trace_id=trace_id, span_id=trace_id[:16], run_id=trace_id, service_name="svc", agent_name="", model="",
        session_id="", user_id="", rule=rule, scorer="answer_relevancy", scorer_version="1", score=0.5, label="",
        reason="", status="ok", error="", sample_rate=1.0, higher_is_better=True, judge_model="m",
        input_tokens=60, output_tokens=10, cost_usd=None, duration_ms=1.0, ready_reason="quiet_period",
        run_duration_ms=1.0, run_error="", timestamp_ns=now,
    )  # fmt: skip


async def test_a_second_replica_with_a_name_already_live_is_refused_at_join(zookeeper: ZooKeeperServer) -> None:
    config = FleetConfig(keeper=zookeeper.chroot(), replica="twin", session_timeout_s=TIMEOUT_S)
    first, second = Fleet(config), Fleet(config)
    reasons: list[str] = []
    second.on_refused(reasons.append)
    first.start()
    try:
        assert await asyncio.to_thread(first.wait_joined, 10)
        second.start()
        await until(lambda: _refused(second), timeout_s=TIMEOUT_S + 10)
        assert reasons and "fleet.replica 'twin' is already a live member" in reasons[0]
        assert "Give every replica its own name" in reasons[0]
        children = await asyncio.to_thread(first.client.get_children, first.node("members"))
        assert len(children) == 1 and first.joined and not second.joined
        assert first.is_leader() and not second.is_leader()
        assert not second.fence.live() and second.metrics()["fleet_refused"] == 1.0
    finally:
        second.stop()
        first.stop()


async def _refused(fleet: Fleet) -> bool:
    return getattr(fleet, "refused", None) is not None


PAUSED_CHILD = """
import sys, time
from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet
fleet = Fleet(FleetConfig(keeper=sys.argv[1], replica="paused", session_timeout_s=float(sys.argv[2])))
fleet.start()
while True:
    token = fleet.fence.token()
    print(time.monotonic(), int(fleet.fence.live()), token and (token.session_id, token.member_zxid), flush=True)
    time.sleep(0.02)
"""


def test_a_paused_process_may_not_act_after_sigcont_until_keeper_proves_a_new_session(
    zookeeper: ZooKeeperServer,
) -> None:
    """SIGSTOP longer than the session timeout: on SIGCONT the fence is shut at once, and opens on a new token."""
    child = subprocess.Popen(
        [sys.executable, "-c", PAUSED_CHILD, zookeeper.chroot(), str(TIMEOUT_S)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    try:
        before = _first_line(child, lambda line: line[1] == "1")
        child.send_signal(signal.SIGSTOP)
        time.sleep(3 * TIMEOUT_S)
        resumed_at = time.monotonic()
        child.send_signal(signal.SIGCONT)
        after = _first_line(child, lambda line: float(line[0]) >= resumed_at)
        assert after[1] == "0"  # the first look after the pause: the lease ran out while it was stopped
        renewed = _first_line(child, lambda line: line[1] == "1")
        assert renewed[2] != before[2]  # the old session ended: only a new token is live
    finally:
        child.kill()
        child.wait(10)


def _first_line(child: Any, wanted: Callable[[list[str]], bool], timeout_s: float = 20.0) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = child.stdout.readline()
        assert line, "the child stopped printing"
        fields = line.strip().split(" ", 2)
        if wanted(fields):
            return fields
    raise AssertionError("no such line in time")


async def test_a_turn_taken_up_before_a_new_token_is_scored_after_it(
    start_replica: StartReplica, zookeeper: ZooKeeperServer
) -> None:
    """#36, the independent check's keeper_all: a session's final score counted 2 of its 4 turns.

    A turn another replica made ready before the session's scoring, but stored after it (its writer's buffer),
    is taken up by the owner from the store. Its session reopens, and the owner loses its Keeper session before
    scoring it again: the new token drops every session held, and both ways back missed this one. The turn was
    marked as taken up already, and the store's last decision is newer than the turn's row. Storage says the
    turn is covered by no recorded scoring, and that is what the owner must go by.
    """
    proxy = PartitionProxy(zookeeper.host, zookeeper.port)
    owner = await start_replica(0, quiet_s=3.0, proxy=proxy)
    await until(lambda: _all_joined([owner], 1))
    await send([owner], rag_traces(1, session="late-turn", first=700))

    async def turns_scored(count: int) -> bool:
        rows = await query(owner, "SELECT Score FROM scores FINAL WHERE Scorer = 'turn_count' AND RunId = 'late-turn'")
        return [float(row[0]) for row in rows] == [float(count)]

    await until(lambda: turns_scored(1), timeout_s=30)
    [(decided,)] = await query(
        owner, "SELECT toUnixTimestamp64Nano(max(Timestamp)) FROM score_decisions WHERE RunId = 'late-turn'"
    )
    [(body,)] = await query(owner, "SELECT Run FROM scored_runs WHERE SessionId = 'late-turn' AND Target = 'run'")
    first = json.loads(body)
    second = {**first, "trace_id": "7" * 32, "run_id": "7" * 16, "span_id": "7" * 16}
    row = ScoredRunRow(
        run_timestamp_ns=int(first["start_time_ns"]) + 1000, trace_id=second["trace_id"], run_id=second["run_id"],
        span_id=second["span_id"], service_name="support-bot", agent_name="helper", run_json=json.dumps(second),
        timestamp_ns=int(decided) - 300_000_000, session_id="late-turn",
    )  # fmt: skip
    await asyncio.to_thread(owner.store.insert_scored_runs_sync, [row])
    assert owner.fleet is not None and owner.fleet.member is not None
    member = owner.fleet.member

    async def taken_up() -> bool:
        return member.turns_taken >= 1

    await until(taken_up, timeout_s=10)
    proxy.cut()  # before the session's quiet period (3 s) ends: the turn waits in a session the new token drops
    await asyncio.sleep(3 * TIMEOUT_S)
    proxy.heal()
    await until(lambda: turns_scored(2), timeout_s=30)
    assert member.sessions_dropped_on_new_token >= 1


async def test_a_session_scored_before_a_new_token_is_scored_again_when_it_continues(
    start_replica: StartReplica, zookeeper: ZooKeeperServer
) -> None:
    """#36, keeper_all: the owner scored a session, lost its Keeper session (which dropped it), and then the
    session went on. The new turn reopened it as a new session, and the sampling engine, which remembered
    sampling that session id, decided it a duplicate: its final score kept the turns before the cut."""
    proxy = PartitionProxy(zookeeper.host, zookeeper.port)
    owner = await start_replica(0, quiet_s=1.0, proxy=proxy)
    await until(lambda: _all_joined([owner], 1))
    await send([owner], rag_traces(1, session="went-on", first=800))

    async def turns_scored(count: int) -> bool:
        rows = await query(owner, "SELECT Score FROM scores FINAL WHERE Scorer = 'turn_count' AND RunId = 'went-on'")
        return [float(row[0]) for row in rows] == [float(count)]

    await until(lambda: turns_scored(1), timeout_s=30)
    proxy.cut()
    await asyncio.sleep(3 * TIMEOUT_S)
    proxy.heal()
    assert owner.fleet is not None and owner.fleet.member is not None
    member = owner.fleet.member

    async def dropped() -> bool:
        return member.sessions_dropped_on_new_token >= 1

    await until(dropped, timeout_s=20)
    await send([owner], rag_traces(1, session="went-on", first=801))
    await until(lambda: turns_scored(2), timeout_s=30)
    decisions = await query(owner, "SELECT Decision FROM score_decisions WHERE RunId = 'went-on' ORDER BY Timestamp")
    assert [row[0] for row in decisions] == ["sampled", "sampled"]
