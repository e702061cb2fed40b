"""A run claimed by a replica that died waits, then goes to a survivor: never dropped while the ring settles."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import cast

from spanscore.run import Run
from spanscore.scoring import claim_check
from spanscore.scoring.claim_check import ClaimCheck, Key, Pair, Taken
from spanscore.scoring.subject import Subject


class Claims:
    """The store and Keeper as one replica sees them: which keys are taken, which traces it owns."""

    def __init__(self) -> None:
        self.states: dict[Key, Taken] = {}
        self.owned: set[str] = set()

    def taken(self, keys: Sequence[Key]) -> Mapping[Key, Taken]:
        return {key: self.states[key] for key in keys if key in self.states}

    def owns_run(self, trace_id: str) -> bool:
        return trace_id in self.owned


CLAIMED = Taken(claimed=True)
JUDGED = frozenset({("judged", "toxicity")})


def _pair(trace_id: str) -> Pair:
    return Subject(cast(Run, SimpleNamespace(trace_id=trace_id, run_id=trace_id)), "quiet_period"), False


async def test_a_claim_whose_replica_died_is_taken_up_once_the_trace_is_owned_here() -> None:
    """A CI run: the killed claimant's heartbeat lapsed (3 s) before Keeper ended its session, so the survivor saw
    the claim gone while Keeper's member list still gave the trace to the dead replica; the run was dropped then,
    and once the member list caught up nobody judged it."""
    claims, check = Claims(), ClaimCheck()
    claims.states[("t1", "t1")] = CLAIMED
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
    claims.states[("t2", "t2")] = CLAIMED
    await check.not_taken(claims, [_pair("t2")])
    del claims.states[("t2", "t2")]
    assert await check.due(claims) == []
    clock[0] += claim_check.ORPHAN_GRACE_S - 1
    assert await check.due(claims) == []
    clock[0] += 2
    assert len(await check.due(claims)) == 1


async def test_an_orphan_the_owner_took_up_is_left_to_it() -> None:
    claims, check = Claims(), ClaimCheck()
    claims.states[("t3", "t3")] = CLAIMED
    await check.not_taken(claims, [_pair("t3")])
    del claims.states[("t3", "t3")]
    assert await check.due(claims) == []
    claims.states[("t3", "t3")] = Taken(claimed=True, done=JUDGED)  # the trace's owner judges it
    assert await check.due(claims) == []
    assert list(check.waiting) == [("t3", "t3")]  # left to the owner while it lives
    claims.states[("t3", "t3")] = Taken(claimed=False, settled=True, done=JUDGED)
    assert await check.due(claims) == []
    assert check.waiting == {}


async def test_a_run_scored_in_part_by_a_replica_now_gone_is_dispatched_without_what_it_scored() -> None:
    """Two rules on one run: the claimant stored its code scorer's score and died in the judge call. Seen while it
    lived, the run waits; once it is gone, the run is dispatched with the scored pair left out, not dropped."""
    claims, check = Claims(), ClaimCheck()
    coded = frozenset({("coded", "completeness")})
    claims.states[("t4", "t4")] = Taken(claimed=True, done=coded)
    assert await check.not_taken(claims, [_pair("t4")]) == []
    claims.states[("t4", "t4")] = Taken(claimed=False, done=coded)
    claims.owned.add("t4")
    [(subject, rescore)] = await check.due(claims)
    assert subject.done == coded and not rescore
    claims.states[("t5", "t5")] = Taken(claimed=False, done=coded)  # already gone when the batch came back
    [(subject, _)] = await check.not_taken(claims, [_pair("t5")])
    assert subject.done == coded


async def test_a_run_this_replica_scored_is_not_decided_again() -> None:
    claims, check = Claims(), ClaimCheck()
    claims.states[("t6", "t6")] = Taken(claimed=False, settled=True, done=JUDGED)
    assert await check.not_taken(claims, [_pair("t6")]) == []
    assert check.waiting == {}
