"""One failing step of a replica's fleet round does not stop the others (#36, item 3).

A spend read that failed at every round once kept every survivor from taking a lost replica's sessions up,
because sizing the shares came first in one block with everything else. Here the survivor's share sizing
raises at every round, on purpose: it must still take the leaving replica's sessions up and score each once
with every turn, log the cause once, and count it per step.
"""

from __future__ import annotations

import logging

import pytest

from spanscore.server.service import Service
from tests.e2e.test_fleet import _all_joined, conversations, send, until
from tests.e2e.test_fleet_fence import StartReplica, decided_once_with_every_turn, start_replica

__all__ = ["start_replica"]  # the fixture, shared with test_fleet_fence


async def test_a_step_that_raises_every_round_does_not_stop_the_others(
    start_replica: StartReplica, caplog: pytest.LogCaptureFixture
) -> None:
    runs = {"quiet_period_s": 1.0}
    replicas = [await start_replica(index, quiet_s=3.0, runs=runs) for index in (0, 1)]
    await until(lambda: _all_joined(replicas, 2))
    leaving, staying = replicas
    member = _member(staying)
    calls = 0

    async def spend_not_read() -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError(f"spend not read: the store refused query {calls}")

    member.sync_shares = spend_not_read  # type: ignore[method-assign]
    caplog.set_level(logging.WARNING, logger="spanscore.scoring")
    await send(replicas, conversations(6, 3))
    await leaving.shutdown()
    assert await decided_once_with_every_turn([staying], 6, 3) == {}  # taken up although sizing fails
    assert calls > 1  # tried again, round after round
    logged = [r.getMessage() for r in caplog.records if "spend not read" in r.getMessage()]
    assert len(logged) == 1, logged  # one cause, logged once, in plain words
    assert "share sizing" in logged[0]
    assert staying.metrics()['fleet_step_failures{step="share sizing"}'] == calls


def _member(service: Service):  # type: ignore[no-untyped-def]
    assert service.fleet is not None and service.fleet.member is not None
    return service.fleet.member
