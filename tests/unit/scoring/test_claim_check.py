"""A run claimed by a replica that died waits, then goes to a survivor: never dropped while the ring settles."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import cast

from spanscore.scoring import claim_check
from spanscore.scoring.claim_check import ClaimCheck, Key, Pair
from spanscore.scoring.subject import Subject


class Claims:
    """The store and Keeper as one replica sees them: which keys are taken, which traces it owns."""

    def __init__(self) -> None:
        self.states: dict[Key, str] = {}
        self.owned: set[str] = set()

    def taken(self, keys: Sequence[Key]) -> Mapping[Key, str]:
        return {key: self.states[key] for key in keys if key in self.states}

    def owns_run(self, trace_id: str) -> bool:
        return trace_id in self.owned


def _pair(trace_id: str) -> Pair:
    return cast(Subject, SimpleNamespace(run=SimpleNamespace(trace_id=trace_id, run_id=trace_id))), False


async def test_a_claim_whose_replica_died_is_taken_up_once_the_trace_is_owned_here() -> None:
    """A CI run: the killed claimant's heartbeat lapsed (3 s) before Keeper ended its session, so the survivor saw
    the claim gone while Keeper's member list still gave the trace to the dead replica; the run was dropped then,
    and once the member list caught up nobody judged it."""
    claims, check = Claims(), ClaimCheck()
    claims.states[("t1", "t1")] = "claimed"
    assert await check.not_taken(claims, [_pair("t1")]) == []
    del claims.states[("t1", "t1")]  # the claimant's heartbeats lapsed; Keeper still lists it, owning t1
    assert await check.due(claims) == []
    claims.owned.add("t1")  # Keeper ended its session: the ring gives t1 to this replica
    assert [pair[0].run.trace_id for pair in await check.due(claims)] == ["t1"]
    assert await check.due(claims) == []
    assert check.taken_up == 1


async def test_an_orphan_owned_by_another_live_replica_is_taken_up_after_a_grace() -> None:
    """The trace's owner may never have received the batch (it went to the dead replica and to this one): after
    a grace long enough for the owner to take it up first (its claim would then show), this replica does."""
    clock = [1000.0]
    claims, check = Claims(), ClaimCheck(clock=lambda: clock[0])
    claims.states[("t2", "t2")] = "claimed"
    await check.not_taken(claims, [_pair("t2")])
    del claims.states[("t2", "t2")]
    assert await check.due(claims) == []
    clock[0] += claim_check.ORPHAN_GRACE_S - 1
    assert await check.due(claims) == []
    clock[0] += 2
    assert len(await check.due(claims)) == 1


async def test_an_orphan_the_owner_took_up_is_left_to_it() -> None:
    claims, check = Claims(), ClaimCheck()
    claims.states[("t3", "t3")] = "claimed"
    await check.not_taken(claims, [_pair("t3")])
    del claims.states[("t3", "t3")]
    assert await check.due(claims) == []
    claims.states[("t3", "t3")] = "scored"  # the trace's owner judged it
    assert await check.due(claims) == []
    assert check.waiting == {}
