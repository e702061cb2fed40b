"""A fleet's gate before a judge call: which decided subjects this replica may score, and its claim on them.

A single process scores whatever becomes ready. In a fleet the same run can become ready on two replicas (a
batch sent again after a kill, a run a lost replica's successor took up from the store), so between deciding
and calling a judge the dispatcher asks here, through the replica's ``SessionFence`` (``scoring.fleet_member``):

- before deciding: while this replica cannot prove its Keeper session, subjects somebody else decided already
  are dropped (the others took them up as a lost replica's); and always, in one read, a run scored already or
  claimed by another live replica waits here instead (``scoring.claim_check``);
- before the judge call: a claim is written and read back, and a run another live replica claimed first is left
  to it (it waits here too, and is taken up if that replica dies without scoring it).

Sessions are fenced by their grants instead, and rescores were decided on purpose: neither is checked here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

from spanscore.run import Run
from spanscore.scoring.claim_check import ClaimCheck, Pair, Taken
from spanscore.scoring.subject import RuleRun
from spanscore.scoring.workers import ScoringJob

log = logging.getLogger(__name__)


class SessionFence(Protocol):
    """A fleet's answer to "may I still?" for a session (``scoring.fleet_member`` over ``fleet.fence``)."""

    def grant(self, session_id: str) -> object | None:
        """Leave to score the session now, or None: this replica cannot prove it owns it."""

    def still(self, grant: object) -> bool:
        """Whether a grant still holds where the score is written."""

    def covered(self, session_ids: Sequence[str]) -> dict[str, set[str]]:
        """The turns recorded scorings of these sessions covered (blocking: a store read)."""

    def superseded(self, session_id: str, turns: set[str]) -> bool:
        """Whether a scoring recorded since covered a turn outside ``turns`` (blocking: a store read)."""

    def runs_unproven(self) -> bool:
        """Whether the replica cannot prove its Keeper session now (cut, paused, rejoined): others may take its runs."""

    def decided(self, trace_ids: Sequence[str]) -> dict[str, set[str]]:
        """Per trace: the subjects (run and span ids) any replica decided on (blocking: a store read)."""

    def taken(self, keys: Sequence[tuple[str, str]]) -> Mapping[tuple[str, str], Taken]:
        """Of these (trace id, run id) keys, those claimed by a live process or scored in part (one store read)."""

    def owns_run(self, trace_id: str) -> bool:
        """Whether this replica owns the trace (it takes up a gone replica's claimed runs of it)."""

    def claimant(self) -> dict[str, str]:
        """Who this replica is in its claims and session records: its replica name and process instance."""

    def claim(self, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Record that this replica scores these keys now, before any judge call (blocking).

        Returns the keys another live replica claimed first: it judges them.
        """

    async def make_room(self, runs: Sequence[Run]) -> None:
        """Before these ready runs are decided: lease more of each daily budget if what is held cannot pay.

        A budget refused here is final for the run, so a burst must not find the replica's slices spent while
        the fleet still has budget left.
        """


class FleetGate:
    """The fence a fleet sets (None in a single process), and the runs left to other replicas meanwhile."""

    def __init__(self) -> None:
        self.fence: SessionFence | None = None
        self.claims = ClaimCheck()
        """Runs another live replica claimed wait here (``scoring.claim_check``)."""
        self.runs_fenced = 0
        """Ready runs not scored because, while this replica could not prove its Keeper session, the store
        showed them decided already (another replica took them up as a lost replica's)."""

    async def unclaimed(self, subjects: list[Pair]) -> list[Pair]:
        """The subjects to decide here (all of them in a single process).

        The others take a lost replica's unhandled runs up from the store once it has been gone for a while; a
        replica that was only cut or paused still holds them and, back, would score them a second time. So
        until it proves its session again, it asks the store first (rescores were decided here on purpose).
        And always, in one read: a run scored already, or claimed by another live replica, is not decided here
        (a batch sent again after a kill; ``scoring.claim_check``).
        """
        fence = self.fence
        if fence is None or not subjects:
            return subjects
        if fence.runs_unproven():
            subjects = await self._undecided(fence, subjects)
        subjects = await self.claims.not_taken(fence, subjects)
        await self.make_room(subjects)
        return subjects

    async def make_room(self, subjects: Sequence[Pair]) -> None:
        """A fleet replica leases what these subjects' judged runs will cost before they are decided."""
        if self.fence is not None and subjects:
            await self.fence.make_room([subject.run for subject, _ in subjects])

    async def due(self) -> list[Pair]:
        """The runs left to a replica that has gone without scoring them: this one's to dispatch now."""
        return await self.claims.due(self.fence) if self.fence is not None else []

    async def _undecided(self, fence: SessionFence, subjects: list[Pair]) -> list[Pair]:
        trace_ids = sorted({subject.run.trace_id for subject, _ in subjects})
        decided = await asyncio.to_thread(fence.decided, trace_ids)
        kept = [
            (subject, rescore)
            for subject, rescore in subjects
            if rescore or subject.run.run_id not in decided.get(subject.run.trace_id, ())
        ]
        if len(kept) < len(subjects):
            self.runs_fenced += len(subjects) - len(kept)
            log.warning(
                "fleet: %d ready runs not scored, another replica decided them while this one could not prove "
                "its Keeper session",
                len(subjects) - len(kept),
            )
        return kept

    async def claim(
        self, jobs: list[ScoringJob[RuleRun]], subjects: Sequence[Pair]
    ) -> tuple[list[ScoringJob[RuleRun]], list[RuleRun]]:
        """A fleet's claim on what these jobs score, in the store before any judge call (a session: '', its id).

        Returns the jobs to run, and the books of the runs left to another live replica that claimed them first
        (only runs of ``subjects`` decided without a rescore are checked; sessions are fenced by their grants):
        those wait here in case that replica dies (``scoring.claim_check``), and the caller releases what it
        reserved for them. When the store does not take the claim the jobs still run: a possible second judge
        call, not a lost score.
        """
        fence = self.fence
        if fence is None or not jobs:
            return jobs, []
        checked = {
            (s.run.trace_id, s.run.run_id) for s, rescore in subjects if not rescore and s.run.target != "session"
        }
        keys = list(dict.fromkeys(("" if j.run.target == "session" else j.run.trace_id, j.run.run_id) for j in jobs))
        try:
            lost = await asyncio.to_thread(fence.claim, keys) & checked
        except Exception as exc:
            self.claims.failures += 1
            log.warning("fleet: scoring claims not written for %d subjects: %s", len(keys), exc)
            return jobs, []
        if not lost:
            return jobs, []
        kept: list[ScoringJob[RuleRun]] = []
        books: dict[int, RuleRun] = {}
        for job in jobs:
            if (job.run.trace_id, job.run.run_id) in lost:
                books[id(job.context)] = job.context
            else:
                kept.append(job)
        for book in books.values():
            self.claims.leave((book.subject, False))
        log.info("fleet: %d runs claimed first by another replica are left to it", len(lost))
        return kept, list(books.values())
