"""A replica killed with ``kill -9``: the turns it acknowledged but never assembled are taken up at once (#36).

Real ``spanscore serve`` replicas (bench.fleet's parts: child processes, one shared store behind a
``clickhouse://`` stand-in, a real ZooKeeper). The victim's runs wait far longer than the test to become
ready, so at the kill every turn it acknowledged is stored as spans only: no run, no session turn. Before,
a survivor took such runs up only once every live replica had had ``runs.max_wait_s`` to make its own ready
(here 600 s, a default is 60 s); the bench ended with 2-7 sessions short of turns. The survivor sees the
member gone and reads the stored spans back at once, so every session is scored with every turn, once.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bench.fleet import USERS, Fleet, _migrate, _scored_with_all_turns, session_outcomes, wait_for
from bench.fleet_parts import Judge
from spanscore.testing import clickhouse_standin
from spanscore.testing.webhook import Receiver
from tests.zookeeper import ZooKeeperServer

SESSIONS, TURNS = 6, 2


class SlowVictimFleet(Fleet):
    """bench.fleet's fleet, scoring sessions only, with runs that wait ``runs_quiet_s`` to become ready."""

    runs_quiet_s = 0.2

    def settings(self) -> dict[str, Any]:
        settings = super().settings()
        settings["collector"]["runs"] = {"quiet_period_s": self.runs_quiet_s, "max_wait_s": 600.0}
        settings["alerts"] = []
        settings["rules"] = [rule for rule in settings["rules"] if rule["name"] == "conversation"]
        return settings


@pytest.fixture
async def fleet(zookeeper: ZooKeeperServer, tmp_path: Path) -> AsyncIterator[SlowVictimFleet]:
    store, port = clickhouse_standin.spawn(str(tmp_path / "clickhouse"), str(USERS / "owner-user.sql"))
    judge, receiver = Judge(), Receiver()
    await judge.start()
    await receiver.start()
    args = argparse.Namespace(replicas=2, sessions=SESSIONS, turns=TURNS, limit_calls=5, quiet=2.0)
    dsn = f"clickhouse://spanscore_owner:CHANGE-ME@127.0.0.1:{port}/"
    built = SlowVictimFleet("killnow", args, tmp_path, zookeeper.port, dsn, judge, receiver, "kill_now")
    try:
        await asyncio.to_thread(_migrate, built)
        yield built
    finally:
        await built.stop()
        await receiver.stop()
        await judge.stop()
        store.terminate()
        store.wait(30)


async def test_a_killed_replicas_acknowledged_turns_are_taken_up_at_once(fleet: SlowVictimFleet) -> None:
    survivor = await fleet.add()
    fleet.runs_quiet_s = 300.0  # the victim assembles nothing before it dies
    victim = await fleet.add()
    sessions = range(SESSIONS)
    for _ in range(TURNS):
        await fleet.send(fleet.round(sessions))
    assert len(fleet.acknowledged) == sum(fleet.sent_turns.values()) * 5  # every span of every turn acknowledged
    await victim.kill()  # kill -9: nothing drained, flushed or handed over
    fleet.sending.remove(victim)

    async def scored() -> bool:
        return await _scored_with_all_turns(fleet)

    assert await wait_for(scored, 120.0), f"sessions short of turns long after the kill:\n{survivor.log_tail()}"
    outcome = await asyncio.to_thread(session_outcomes, fleet)
    records = await asyncio.to_thread(fleet.query, _RECORDS)
    assert outcome["sessions"]["scored_again_without_new_turns"] == 0, (outcome, records)


_RECORDS = (
    "SELECT RunId, Run, (SELECT count() FROM score_decisions AS d WHERE d.RunId = r.RunId) FROM scored_runs AS r"
    " WHERE Target = 'session' AND TraceId = '' ORDER BY RunId, Timestamp"
)
