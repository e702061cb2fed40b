"""Runs a lost replica was still assembling (spans stored, run not yet ready): who takes them up, and when.

They are orphans: nobody else holds them in memory. A replica that stopped on purpose left a note of them
(``spanscore.fleet.handover``), and each survivor takes up at once the listed traces it now owns by trace id.
Without a note (``kill -9``, a crash, a session that expired), the store holds the lost replica's acknowledged
spans, mixed with those of traces live replicas are still assembling. So every live replica notes in Keeper
what it holds (``fleet.handover.write_holding``), and once a survivor has read every other live replica's
note, it reads back at once the unhandled traces that began before the loss, that it owns and that no live
replica holds, and assembles and scores them as a restarted process would (storage says which runs were
handled already): a killed replica's acknowledged turns are not left until ``runs.max_wait_s``. Until every
live replica has had that wait to make its own runs ready, each asks the store before scoring a ready run
(``recent``: a span routed to a live replica after the loss may belong to a trace taken up elsewhere), and a
second look at the end of the wait takes up whatever is still unhandled.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet
from spanscore.fleet.handover import read_handovers, read_holdings, write_holding
from spanscore.runs.recovery import StoredSpanSource

if TYPE_CHECKING:
    from spanscore.scoring.live import LiveScoring

log = logging.getLogger(__name__)

NOTE_SKEW_S = 1.0
"""How much earlier than this replica's sight of a loss another replica's holding note may be written and still
count for it (replicas see a change of members within moments of each other)."""


@dataclass
class _Loss:
    """One loss of members being handled: what is left to do about it."""

    deadline: float
    """When every live replica has had ``runs.max_wait_s`` to make its own runs ready (monotonic)."""
    lost_at_ns: int
    """Traces that began before this (Unix ns) may be the lost replicas'."""
    lost: list[str]
    """Who was lost, until their notes were read."""
    note_due: bool = True
    """This replica's holding note is still to be written."""
    at_once: bool = True
    """The take-up at once (once every live replica's holding note is read) is still to come."""


class LostRuns:
    def __init__(self, live: LiveScoring, fleet: Fleet, config: FleetConfig) -> None:
        self._live = live
        self._fleet = fleet
        self._config = config
        self._loss: _Loss | None = None
        self.taken = 0
        """Traces taken up, from notes, at the loss or after the wait."""
        self.handed_over = 0
        """Of those, traces a replica that stopped on purpose listed."""

    def lost(self, replicas: Iterable[str]) -> None:
        """Replicas left the membership (called on a Keeper thread): look for their runs."""
        assembly = self._live.assembler.config
        wait_s = assembly.max_wait_s + assembly.quiet_period_s + self._config.turn_poll_s
        self._loss = _Loss(time.monotonic() + wait_s, time.time_ns(), sorted(replicas))

    def recent(self) -> bool:
        """A replica was lost less than the others' wait ago: a ready run may have been taken up elsewhere."""
        loss = self._loss
        return loss is not None and time.monotonic() < loss.deadline

    async def take_up(self) -> None:
        """A lost replica's unready runs, in three steps.

        What its note lists, at once; without a note, once every live replica said what it holds, the rest
        this replica owns; after the others' wait, whatever is still unhandled.
        """
        loss = self._loss
        if loss is None:
            return
        if loss.note_due:
            await asyncio.to_thread(write_holding, self._fleet, self._live.assembler.pending_trace_ids())
            loss.note_due = False
        if loss.lost:
            notes = await asyncio.to_thread(read_handovers, self._fleet, loss.lost, loss.lost_at_ns)
            listed = {trace for traces in notes.values() for trace in traces}
            if listed:
                self.handed_over += await self.take_up_orphans(loss.lost_at_ns, only=listed)
            loss.at_once = set(notes) != set(loss.lost)  # one left without a note: what it held is not listed
            loss.lost = []
        if loss.at_once:
            others = [member for member in self._fleet.members() if member != self._fleet.replica]
            since = loss.lost_at_ns - int(NOTE_SKEW_S * 1e9)
            held = await asyncio.to_thread(read_holdings, self._fleet, others, since)
            if held is not None:  # every live replica said what it holds: the rest is the lost one's
                await self.take_up_orphans(loss.lost_at_ns, skip=held)
                loss.at_once = False
        if time.monotonic() >= loss.deadline:
            await self.take_up_orphans(loss.lost_at_ns)
            self._loss = None

    async def take_up_orphans(
        self, lost_at_ns: int, *, only: Collection[str] | None = None, skip: Collection[str] = ()
    ) -> int:
        """Assemble the unhandled traces of a lost replica that this replica owns now; how many were taken.

        ``only``: the trace ids a replica that left on purpose listed; otherwise every recent trace but ``skip``
        (those live replicas hold).
        """
        source = StoredSpanSource(self._live.store)
        assembler = self._live.assembler
        since = assembler.recovery_since(time.time_ns())
        found = await asyncio.to_thread(lambda: list(source.recent_traces(since)))
        mine = [
            trace
            for trace in found
            if (only is None or trace.trace_id in only)
            and trace.trace_id not in skip
            and self._fleet.owns(f"trace:{trace.trace_id}")
            and all(s.start_time_ns < lost_at_ns for s in trace.spans)
        ]
        held = set(assembler.pending_trace_ids())
        mine = [trace for trace in mine if trace.trace_id not in held]
        if not mine:
            return 0
        handled = await asyncio.to_thread(source.handled_runs, [trace.trace_id for trace in mine])
        orphans = [trace for trace in mine if not _all_handled(trace.trace_id, handled)]
        taken = assembler.adopt(orphans, handled, time.time_ns())
        self.taken += taken
        log.info("fleet: took up %d traces a lost replica was assembling", taken)
        return taken


def _all_handled(trace_id: str, handled: Mapping[str, Mapping[str, bool]]) -> bool:
    """Every subject of the trace was decided and needs nothing more (a trace never decided is not)."""
    marks = handled.get(trace_id, {})
    return bool(marks) and all(marks.values())
