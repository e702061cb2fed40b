"""The dispatcher's side of fleet scoring claims: leave a run another live replica judges, take it up if it dies.

A batch sent again after its first replica was killed before its acknowledgement (or answered late) reaches
another replica, which assembles the same run. Before deciding, the dispatcher asks the store once per round
(``SessionFence.taken``): a run already scored is dropped; a run claimed by another replica that is still alive
waits here; once that replica is gone and no score came, the replica that owns the run's trace dispatches it
(the others drop it: a lost replica's runs are their trace owner's, as ``fleet_lost_runs`` takes them).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from spanscore.scoring.subject import Subject

log = logging.getLogger(__name__)

Key = tuple[str, str]
Pair = tuple[Subject, bool]
WAIT_S = 900.0
"""How long a run claimed by a live replica is watched: longer than any judge call with its retries."""
MAX_WAITING = 20_000


class Claims(Protocol):
    def taken(self, keys: Sequence[Key]) -> Mapping[Key, str]: ...

    def owns_run(self, trace_id: str) -> bool: ...


class ClaimCheck:
    def __init__(self) -> None:
        self.waiting: dict[Key, tuple[Pair, float]] = {}
        self.left_to_others = 0
        """Ready runs not dispatched here: scored already, or claimed by another live replica."""
        self.taken_up = 0
        """Runs claimed by a replica that died without a score, dispatched here."""
        self.failures = 0
        """Claim reads or writes the store refused (the runs went on unchecked)."""

    async def not_taken(self, claims: Claims, subjects: list[Pair]) -> list[Pair]:
        """The subjects no other live replica claimed and none scored; those claimed wait (one store read).

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
        now = time.monotonic()
        for pair in subjects:
            state = None if pair[1] else taken.get(_key(pair[0]))
            if state is None:
                kept.append(pair)
                continue
            self.left_to_others += 1
            if state == "claimed" and len(self.waiting) < MAX_WAITING:
                self.waiting[_key(pair[0])] = (pair, now)
        return kept

    async def due(self, claims: Claims) -> list[Pair]:
        """The waiting runs whose claimant is gone without a score and whose trace this replica owns."""
        now = time.monotonic()
        for key in [k for k, (_, since) in self.waiting.items() if now - since > WAIT_S]:
            del self.waiting[key]
        if not self.waiting:
            return []
        taken = await asyncio.to_thread(claims.taken, list(self.waiting))
        due = []
        for key in [k for k in self.waiting if k not in taken]:
            pair, _ = self.waiting.pop(key)
            if claims.owns_run(key[0]):
                due.append(pair)
        for key in [k for k, state in taken.items() if state == "scored" and k in self.waiting]:
            del self.waiting[key]
        if due:
            self.taken_up += len(due)
            log.info("fleet: taking up %d runs claimed by a replica that is gone without scoring them", len(due))
        return due


def _key(subject: Subject) -> Key:
    return (subject.run.trace_id, subject.run.run_id)
