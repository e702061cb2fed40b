"""A fleet replica's scoring claims: written before its judge calls, read before it dispatches.

A claim counts only while its owner is alive. A run claimed by another replica that is still a member of the
fleet (in Keeper's member list as last seen, and a "joined" heartbeat in the store within three beats) is left
to it; a run that has a score is left alone; a run whose claimant is gone and that has no score is taken up
(the claimant was killed between its claim and its score, which would otherwise be lost). A judge call in flight
when its replica's liveness lapses can still be made twice: once by the dead replica, once by its successor.
"""

from __future__ import annotations

from collections.abc import Sequence

from spanscore.fleet.coordinator import Fleet
from spanscore.scoring.claim_check import WAIT_S, Taken
from spanscore.storage.fleet_records import Store
from spanscore.storage.scoring_claims import (
    Key,
    claim_states,
    session_records,
    sessions_claimed_since_scored,
    write_claims,
)


class FleetClaims:
    def __init__(self, store: Store, fleet: Fleet, instance: str, alive_window_s: float) -> None:
        self._store = store
        self._fleet = fleet
        self.instance = instance
        """This process (as in its heartbeats): its own claims never hold it back."""
        self._alive_window_s = alive_window_s
        self.written = 0

    def alive(self, replica: str, heartbeat: bool) -> bool:
        """Whether a claimant still counts: a live member (Keeper, as last seen) that beat lately."""
        return heartbeat and replica in self._fleet.members()

    def taken(self, keys: Sequence[Key]) -> dict[Key, Taken]:
        """Of these keys, those claimed by another live process, or scored in part, or by this one (one read).

        A live claimant holds a run even when some of its scores are stored: it may still be judging the rest.
        Scores with no live claimant are a gone replica's part: the rest is this replica's to judge.
        """
        taken: dict[Key, Taken] = {}
        for key, state in claim_states(self._store, keys, self._alive_window_s).items():
            done = frozenset(state.done)
            if any(c.instance != self.instance and self.alive(c.replica, c.heartbeat) for c in state.claimants):
                taken[key] = Taken(claimed=True, done=done)
            elif done and any(c.instance == self.instance for c in state.claimants):
                taken[key] = Taken(claimed=False, settled=True, done=done)
            elif done:
                taken[key] = Taken(claimed=False, done=done)
        return taken

    def owns_run(self, trace_id: str) -> bool:
        return self._fleet.owns(f"trace:{trace_id}")

    def claim(self, keys: Sequence[Key]) -> set[Key]:
        """Record, and wait for the store to take, that this process scores these keys now; then read them back.

        Returns the keys another live process claimed before this one: two replicas that both read "unclaimed"
        before either claim was stored (checking and claiming are two statements) both claim, and the earliest
        claim in the store's clock (then the lower instance) judges. The later reader sees both claims; an
        earlier one that saw only its own is the earliest.
        """
        token = self._fleet.fence.token()
        session, epoch = (token.session_id, token.member_zxid) if token is not None else (0, 0)
        write_claims(self._store, keys, self._fleet.replica, self.instance, (session, epoch))
        self.written += len(keys)
        lost: set[Key] = set()
        for key, state in claim_states(self._store, keys, self._alive_window_s, with_scores=False).items():
            contenders = [
                c for c in state.claimants if c.instance == self.instance or self.alive(c.replica, c.heartbeat)
            ]
            if contenders and min(contenders, key=lambda c: (c.at, c.instance)).instance != self.instance:
                lost.add(key)
        return lost

    def claimant(self) -> dict[str, str]:
        return {"replica": self._fleet.replica, "instance": self.instance}

    def scoring_elsewhere(self, session_ids: Sequence[str]) -> set[str]:
        """The sessions another live process claimed since their latest score: it is scoring them now."""
        claims = sessions_claimed_since_scored(self._store, session_ids, self._alive_window_s, WAIT_S)
        return {
            session
            for session, claimants in claims.items()
            if any(c.instance != self.instance and self.alive(c.replica, c.heartbeat) for c in claimants)
        }

    def covered(self, session_ids: Sequence[str]) -> dict[str, set[str]]:
        """Per session: the turns its recorded scorings covered, counting a record only while it holds.

        A record holds once a session score followed it, or while its claimant is alive. A replica killed
        between its record and its score leaves a record that no longer holds once it is gone: the session's
        next owner scores those turns instead of taking them as covered (and losing the scoring).
        """
        covered: dict[str, set[str]] = {}
        for session, records in session_records(self._store, session_ids, self._alive_window_s).items():
            for record in records:
                if not record.instance or record.scored_after or self.alive(record.replica, record.heartbeat):
                    covered.setdefault(session, set()).update(record.turns)
        return covered
