"""A session its owner may not score for a moment is scored once the fence is live again (#36, item 4).

The fence's lease lasts part of the Keeper session timeout and is renewed by round trips; on a loaded machine
a renewal can come late, and the lease lapses for a moment while the session (and the token) lives on. A
session is only taken from the tracker while the fence is live, but between that and its grant come store
reads (its stored turns, what recorded scorings covered), slow under load. A lease that ran out in between
refused the grant, yet the tracker had marked the session scored: nobody else owns it, the owner thought it
done, and it was never scored unless a new turn came. Here the lease is revoked during that read, as a late
renewal would leave it; Keeper keeps the session, so the next renewal brings the same token back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from tests.e2e.test_fleet import _all_joined, conversations, send, until
from tests.e2e.test_fleet_fence import StartReplica, decided_once_with_every_turn, start_replica

__all__ = ["start_replica"]  # the fixture, shared with test_fleet_fence

QUIET_S = 1.0


async def test_a_session_refused_during_a_lease_lapse_is_scored_once_the_fence_is_live(
    start_replica: StartReplica,
) -> None:
    owner = await start_replica(0, quiet_s=QUIET_S)
    await until(lambda: _all_joined([owner], 1))
    assert owner.fleet is not None and owner.live is not None
    fence, dispatcher = owner.fleet.fleet.fence, owner.live.dispatcher
    member = owner.fleet.member
    assert member is not None
    token = fence.token()
    read_covered = member.covered
    lapsed: list[float] = []

    def covered_then_lapse(session_ids: Sequence[str]) -> dict[str, set[str]]:
        found = read_covered(session_ids)
        if not lapsed:  # once: the lease runs out while the store answers
            lapsed.append(time.monotonic())
            fence.revoke()
        return found

    member.covered = covered_then_lapse  # type: ignore[method-assign]
    await send([owner], conversations(2, 2))
    await until(lambda: _fenced(dispatcher))  # the grant came in the lapse
    assert await asyncio.to_thread(fence.wait_live, 10.0)
    assert fence.token() == token  # the same session: no new token drops and retakes anything
    assert await decided_once_with_every_turn([owner], 2, 2) == {}


async def _fenced(dispatcher: Any) -> bool:
    return bool(dispatcher.sessions_fenced >= 1)
