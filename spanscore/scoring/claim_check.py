"""The dispatcher's side of fleet scoring claims: leave a run another live replica judges, take it up if it dies.

A batch sent again after its first replica was killed before its acknowledgement (or answered late) reaches
another replica, which assembles the same run. Before deciding, the dispatcher asks the store once per round
(``SessionFence.taken``): a run this process scored already is dropped; a run claimed by another replica that is
still alive waits here (it may still be judging the rest of it); once that replica is gone, the replica that owns
the run's trace dispatches what has no score yet.
A run whose claimant died after some of its scores were stored (a code scorer's, one rule of two) goes on
without those: only the (rule, scorer) pairs with no score are judged here (``Subject.done``).

A run is never dropped while its claimant's fate settles. The claim stops counting when the claimant's
heartbeats lapse (three beats), which can be seconds before Keeper ends its session and the member list (so the
trace ring) moves its traces to the survivors: a run seen unclaimed but owned elsewhere keeps waiting. A
survivor that does not own it takes it up after ``ORPHAN_GRACE_S`` without a claim or score from anyone: the
owner may never have received the batch (it went to the dead replica and to this one), and an owner that did
would have claimed it long before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from spanscore.scoring.subject import Subject

log = logging.getLogger(__name__)

Key = tuple[str, str]
Pair = tuple[Subject, bool]
WAIT_S = 900.0
"""How long a run claimed by a live replica is watched: longer than any judge call with its retries."""
MAX_WAITING = 20_000
ORPHAN_GRACE_S = 30.0
"""How long a run unclaimed by anyone alive waits for its trace's owner (if not this replica) to take it up."""


@dataclass(frozen=True, slots=True)
class Taken:
    """What the store says of a run another process may have had: claimed by a live one, or scored in part."""

    claimed: bool
    """Another live process claims it (it may have stored some of its scores): leave it to that process."""
    settled: bool = False
    """This process claimed and scored it already: nothing to do."""
    done: frozenset[tuple[str, str]] = frozenset()
    """(rule, scorer) pairs with a stored score; with no live claimant, the rest are this process's to judge."""


class Claims(Protocol):
    def taken(self, keys: Sequence[Key]) -> Mapping[Key, Taken]: ...

    def owns_run(self, trace_id: str) -> bool: ...


class ClaimCheck:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.waiting: dict[Key, tuple[Pair, float]] = {}
        self.unclaimed_since: dict[Key, float] = {}
        """Waiting runs no live replica claims any more, since when (the owner's grace runs from then)."""
        self.left_to_others = 0
        """Ready runs not dispatched here: settled already, or claimed by another live replica."""
        self.taken_up = 0
        """Runs claimed by a replica that died before all their scores were stored, dispatched here."""
        self.failures = 0
        """Claim reads or writes the store refused (the runs went on unchecked)."""
        self.raced = 0
        """Runs this replica claimed at the same time as another, whose earlier claim judges them."""

    async def not_taken(self, claims: Claims, subjects: list[Pair]) -> list[Pair]:
        """The subjects to decide here, without their scored (rule, scorer) pairs; those claimed wait (one read).

        Rescores were decided on purpose. When the store cannot be read, the runs go on unchecked (a possible
        second judge call rather than a lost run).
        """
        keys = [_key(subject) for subject, rescore in subjects if not rescore]
        if not keys:
            return subjects
        try:
            taken = await asyncio.to_thread(claims.taken, keys)
        except Exception as exc:
            self.failures += 1
            log.warning("fleet: scoring claims not read, %d runs dispatched unchecked: %s", len(keys), exc)
            return subjects
        kept = []
        now = self._clock()
        for pair in subjects:
            state = None if pair[1] else taken.get(_key(pair[0]))
            if state is None:
                kept.append(pair)
            elif not state.claimed and not state.settled:
                kept.append(_without(pair, state.done))  # scored in part by a process now gone
            else:
                self.left_to_others += 1
                if state.claimed and len(self.waiting) < MAX_WAITING:
                    self.waiting[_key(pair[0])] = (pair, now)
        return kept

    def leave(self, pair: Pair) -> None:
        """Wait on a run another live replica claimed before this one (found after claiming it too).

        Like a run seen claimed before deciding, it is taken up if that replica dies before its scores are stored.
        """
        self.left_to_others += 1
        self.raced += 1
        if len(self.waiting) < MAX_WAITING:
            self.waiting.setdefault(_key(pair[0]), (pair, self._clock()))

    async def due(self, claims: Claims) -> list[Pair]:
        """The waiting runs whose claimant is gone before all their scores were stored, and that fall to this replica.

        A run falls to the replica that owns its trace, or to this one after ``ORPHAN_GRACE_S`` without a live
        claim; the (rule, scorer) pairs with a stored score are left out.
        """
        now = self._clock()
        for key in [k for k, (_, since) in self.waiting.items() if now - since > WAIT_S]:
            self._forget(key)
        if not self.waiting:
            return []
        taken = await asyncio.to_thread(claims.taken, list(self.waiting))
        due = []
        for key in list(self.waiting):
            state = taken.get(key)
            if state is not None and state.settled:
                self._forget(key)
            elif state is not None and state.claimed:
                self.unclaimed_since.pop(key, None)  # claimed again (the owner took it up): its grace restarts
            elif claims.owns_run(key[0]) or now - self.unclaimed_since.setdefault(key, now) > ORPHAN_GRACE_S:
                due.append(_without(self.waiting[key][0], state.done if state is not None else frozenset()))
                self._forget(key)
        if due:
            self.taken_up += len(due)
            log.info("fleet: taking up %d runs claimed by a replica that is gone without scoring them", len(due))
        return due

    def _forget(self, key: Key) -> None:
        del self.waiting[key]
        self.unclaimed_since.pop(key, None)


def _key(subject: Subject) -> Key:
    return (subject.run.trace_id, subject.run.run_id)


def _without(pair: Pair, done: frozenset[tuple[str, str]]) -> Pair:
    subject, rescore = pair
    return (dataclasses.replace(subject, done=subject.done | done) if done else subject), rescore
