"""A run is judged once when its batch reaches a second replica: after ``kill -9``, or while the first still judges.

The exporter sends a batch again when it got no acknowledgement: the replica that stored it was killed before
it answered, or answered late. Another replica then assembles the same run. In ``bench.fleet``'s kill scenario
1 of 30 runs was judged twice that way (#36). Real ``spanscore serve`` replicas (``bench.fleet_parts``), a
real ZooKeeper, one shared store (the ClickHouse stand-in over chDB), a judge on loopback that can hold a
replica's calls open; a kill is ``kill -9``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bench.fleet import USERS, Fleet, _migrate
from bench.fleet_parts import Judge, Replica
from spanscore.testing import clickhouse_standin
from spanscore.testing.webhook import Receiver
from tests.zookeeper import ZooKeeperServer

JUDGED = "SELECT count() FROM scores WHERE Rule = 'judged'"


class HeldJudge(Judge):
    """The bench's judge, which answers a held replica's calls only once released (at most ``HOLD_S``)."""

    HOLD_S = 6.0  # under the replicas' judge timeout (10 s)

    def __init__(self) -> None:
        super().__init__()
        self.arrived: Counter[str] = Counter()
        self.held: set[str] = set()
        self.released = asyncio.Event()

    async def _handle(self, request: web.Request) -> web.Response:
        replica = request.match_info["replica"]
        self.arrived[replica] += 1
        if replica in self.held:
            try:
                await asyncio.wait_for(self.released.wait(), self.HOLD_S)
            except TimeoutError:
                pass
        return await super()._handle(request)


World = Callable[[str], Awaitable[tuple[Fleet, HeldJudge]]]


@pytest.fixture
async def world(zookeeper: ZooKeeperServer, tmp_path: Path) -> AsyncIterator[World]:
    store, port = clickhouse_standin.spawn(str(tmp_path / "clickhouse"), str(USERS / "owner-user.sql"))
    made: list[tuple[Fleet, HeldJudge, Receiver]] = []

    async def make(name: str) -> tuple[Fleet, HeldJudge]:
        args = argparse.Namespace(replicas=2, sessions=1, turns=1, limit_calls=40, quiet=1.0, cut=5.0)
        judge, receiver = HeldJudge(), Receiver()
        await judge.start()
        await receiver.start()
        dsn = f"clickhouse://spanscore_owner:CHANGE-ME@127.0.0.1:{port}/"
        fleet = Fleet(name, args, tmp_path / name, zookeeper.port, dsn, judge, receiver, f"claims_{name}")
        made.append((fleet, judge, receiver))
        await asyncio.to_thread(_migrate, fleet)
        return fleet, judge

    try:
        yield make
    finally:
        for fleet, judge, receiver in made:
            await fleet.stop()
            await receiver.stop()
            await judge.stop()
        clickhouse_standin.stop(store)


async def until(check: Callable[[], Awaitable[bool]], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.3)
    raise AssertionError(f"not reached within {timeout_s} s")


async def count(fleet: Fleet, sql: str) -> int:
    rows: list[Any] = await asyncio.to_thread(fleet.query, sql)
    return int(rows[0][0])


async def two_members(fleet: Fleet) -> tuple[Replica, Replica]:
    """Two replicas, each a member of the fleet (its heartbeat in the store says it joined)."""
    first, second = await fleet.add(), await fleet.add()
    joined = "SELECT uniqExactIf(Replica, Joined = 1) FROM fleet_heartbeats"
    await until(lambda: _at_least(fleet, joined, 2))
    return first, second


async def _at_least(fleet: Fleet, sql: str, wanted: int) -> bool:
    return await count(fleet, sql) >= wanted


async def test_a_batch_sent_again_is_not_judged_by_a_second_replica_while_the_first_judges_it(world: World) -> None:
    fleet, judge = await world("live")
    first, second = await two_members(fleet)
    judge.held.add(first.name)
    spans = fleet.round(range(1))
    assert await fleet._export(first, spans)
    await until(lambda: _arrived(judge, first.name))  # the first replica's judge call is open
    assert await fleet._export(second, spans)  # the exporter's retry, to another replica
    await asyncio.sleep(4.0)  # the second assembles the run 0.2 s after its spans: its judge call is made by now
    judge.released.set()
    await until(lambda: _at_least(fleet, JUDGED, 1))
    assert judge.arrived == Counter({first.name: 1})


async def test_a_run_scored_by_a_replica_killed_before_its_ack_is_not_judged_again_when_its_batch_comes_back(
    world: World,
) -> None:
    fleet, judge = await world("scored")
    first, second = await two_members(fleet)
    spans = fleet.round(range(1))
    assert await fleet._export(first, spans)
    await until(lambda: _at_least(fleet, JUDGED, 1))  # judged and its score stored
    await first.kill()  # kill -9: the acknowledgement never reached the exporter (here: taken as lost)
    assert await fleet._export(second, spans)
    await asyncio.sleep(4.0)  # the second replica's judge call would be made by now
    assert judge.arrived == Counter({first.name: 1})


class TwoRuleFleet(Fleet):
    """The bench's fleet with a second rule on every run: a code scorer, stored at once, beside the judged one."""

    def settings(self) -> dict[str, Any]:
        settings = super().settings()
        coded = {"name": "coded", "target": "run", "always": {"where": {"service.name": "support-bot"}},
                 "scorers": ["completeness"]}  # fmt: skip
        settings["rules"] = [*settings["rules"], coded]
        return settings


async def test_a_run_scored_in_part_by_a_replica_killed_mid_judge_call_gets_the_rest_from_the_survivor(
    world: World,
) -> None:
    """A claim counts only while its replica is alive; two rules on one run. The first replica stored the code
    scorer's score, then was killed in its judge call. Its batch sent again reaches the survivor while the claim
    still looks alive; once the killed replica is gone, the survivor takes the run up and judges only what has no
    score (one judge call), leaving the code score alone: it used to drop the run whole on finding a score.
    (Also the run loss of a CI run: the survivor dropped a run it saw unclaimed while Keeper still gave its trace
    to the dead replica.)"""
    plain, judge = await world("partial")
    fleet = TwoRuleFleet(
        plain.name, plain.args, plain.base, plain.zookeeper_port, plain.dsn, judge, plain.receiver, plain.database
    )
    first, second = await two_members(fleet)
    try:
        judge.held.add(first.name)
        spans = fleet.round(range(1))
        assert await fleet._export(first, spans)
        await until(lambda: _arrived(judge, first.name))
        await until(lambda: _at_least(fleet, "SELECT count() FROM scores WHERE Rule = 'coded'", 1))
        await first.kill()
        assert await fleet._export(second, spans)
        await until(lambda: _at_least(fleet, "SELECT count() FROM scores WHERE Rule = 'judged' AND Status = 'ok'", 1))
        assert judge.arrived[second.name] == 1
        await asyncio.sleep(1.0)  # a second code score would be stored by now
        assert await count(fleet, "SELECT count() FROM scores WHERE Rule = 'coded'") == 1
    finally:
        await fleet.stop()


async def _arrived(judge: HeldJudge, replica: str) -> bool:
    return judge.arrived[replica] >= 1


class SessionJudgedFleet(Fleet):
    """The bench's fleet with one rule only: sessions judged by an LLM (so a session's judge call can be held)."""

    def settings(self) -> dict[str, Any]:
        settings = super().settings()
        settings["rules"] = [{"name": "conversation", "target": "session", "scorers": ["conversation_relevancy"]}]
        settings["alerts"] = []
        return settings


async def test_a_session_whose_owner_is_killed_between_its_scoring_record_and_its_score_is_scored_by_the_next(
    world: World,
) -> None:
    """The session's owner records the turns it scores (so that a later owner does not score them again), then
    calls its judge; killed then, it leaves a record and no score. The record counts only while its replica is
    alive: the next owner scores the session instead of taking it as covered."""
    plain, judge = await world("session")
    fleet = SessionJudgedFleet(
        plain.name, plain.args, plain.base, plain.zookeeper_port, plain.dsn, judge, plain.receiver, plain.database
    )
    first, second = await two_members(fleet)
    try:
        judge.held.update({first.name, second.name})
        assert await fleet._export(first, fleet.round(range(1)))
        await until(lambda: _any_arrived(judge))  # the owner recorded the session and calls its judge
        owner, survivor = (first, second) if judge.arrived[first.name] else (second, first)
        records = "SELECT count() FROM scored_runs WHERE Target = 'session' AND TraceId = ''"
        await until(lambda: _at_least(fleet, records, 1))
        await owner.kill()
        judge.held.clear()
        judge.released.set()
        await until(lambda: _at_least(fleet, "SELECT count() FROM scores WHERE Target = 'session'", 1))
        assert judge.arrived[survivor.name] >= 1  # the survivor judged it (a parse retry may make it two calls)
    finally:
        await fleet.stop()


async def _any_arrived(judge: HeldJudge) -> bool:
    return sum(judge.arrived.values()) >= 1


class OneProcess(SessionJudgedFleet):
    """The judged session rule and a code-scored run rule on one ``spanscore serve`` process outside any fleet.

    The run rule's score says when the turn's run was handled (decided, and stored as a turn), before the kill.
    """

    def settings(self) -> dict[str, Any]:
        settings = super().settings()
        del settings["fleet"]
        coded = {"name": "coded", "target": "run", "always": {"where": {"service.name": "support-bot"}},
                 "scorers": ["completeness"]}  # fmt: skip
        settings["rules"] = [*settings["rules"], coded]
        return settings


async def test_a_session_whose_process_is_killed_in_its_judge_call_is_scored_after_the_restart(world: World) -> None:
    """The session's ``sampled`` decision is stored, its judge call is open, and the process is killed: the score
    died with it. The restarted process takes the session up from the store; a stored decision alone used to
    settle it, so it stayed unscored until a next turn that may never come (#36)."""
    plain, judge = await world("restart")
    fleet = OneProcess(
        plain.name, plain.args, plain.base, plain.zookeeper_port, plain.dsn, judge, plain.receiver, plain.database
    )
    try:
        first = await fleet.add()
        judge.held.add(first.name)
        assert await fleet._export(first, fleet.round(range(1)))
        await until(lambda: _arrived(judge, first.name))
        sampled = "SELECT count() FROM score_decisions WHERE Target = 'session' AND Decision = 'sampled'"
        await until(lambda: _at_least(fleet, sampled, 1))  # the decision is stored: the session looked settled
        await until(lambda: _at_least(fleet, "SELECT count() FROM scores WHERE Rule = 'coded'", 1))
        await first.kill()
        judge.held.clear()
        judge.released.set()
        second = await fleet.add()
        await until(lambda: _at_least(fleet, "SELECT count() FROM scores WHERE Target = 'session'", 1))
        assert judge.arrived[second.name] >= 1
    finally:
        await fleet.stop()
