"""Runs a lost replica was still assembling (spans stored, run not yet ready): who takes them up, and when.

They are orphans: nobody else holds them in memory. A replica that stopped on purpose left a note of them
(``spanscore.fleet.handover``), and each survivor takes up at once the listed traces it now owns by trace id.
Without a note, each survivor waits until every live replica has had ``runs.max_wait_s`` to make ready and
decide what it held, then reads back the unhandled traces that began before the loss and that it owns, and
assembles and scores them as a restarted process would (storage says which runs were handled already).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet
from spanscore.fleet.handover import read_handovers
from spanscore.runs.recovered import RecoveredTrace
from spanscore.runs.recovery import StoredSpanSource

if TYPE_CHECKING:
    from spanscore.scoring.live import LiveScoring

log = logging.getLogger(__name__)


class LostRuns:
    def __init__(self, live: LiveScoring, fleet: Fleet, config: FleetConfig) -> None:
        self._live = live
        self._fleet = fleet
        self._config = config
        self._orphans: tuple[float, int, list[str]] | None = None
        """After a replica was lost: (when to look, monotonic), the loss time (Unix ns) traces began before, and
        who was lost (a replica that left on purpose left a note of what it held: taken up at once)."""
        self.taken = 0
        """Traces of a lost replica without a note, taken up after the wait (``fleet_orphan_traces_taken``)."""
        self.handed_over = 0
        """Traces a replica that stopped on purpose listed, taken up at once (apart from ``taken``)."""
        self._start: tuple[float, int] | None = None
        """After this process first joined: (when to look, monotonic), and the join time (Unix ns)."""
        self.recovered_at_start = 0
        """Unhandled traces begun before this process joined, taken up as its start-up recovery."""

    def joined(self, alone: bool) -> None:
        """On this process's first join to the fleet: recover the unhandled traces begun before it.

        What a process alone does at start (``RunAssembler.recover``), but over the whole fleet's store: the
        runs of traces begun before are other live replicas' to decide, or a stopped fleet's left unready. So
        it waits as for a lost replica, until every live replica has had ``max_wait_s`` to decide what it held,
        and then takes up only the unhandled ones it owns. Alone in the fleet, nobody else holds any: at once.
        """
        self._start = (time.monotonic() + (0.0 if alone else self._wait_s()), time.time_ns())

    def _wait_s(self) -> float:
        assembly = self._live.assembler.config
        return assembly.max_wait_s + assembly.quiet_period_s + self._config.turn_poll_s

    def lost(self, replicas: Iterable[str]) -> None:
        """Replicas left the membership (called on a Keeper thread): look for their runs."""
        self._orphans = (time.monotonic() + self._wait_s(), time.time_ns(), sorted(replicas))

    async def take_up(self) -> None:
        """A lost replica's unready runs: at once when it left a note of them, else after the others' wait.

        And, once, this process's start-up recovery (``joined``).
        """
        if self._start is not None and time.monotonic() >= self._start[0]:
            queued = await self.take_up_orphans(self._start[1], counted=self._count_recovered_at_start)
            self._start = None
            if queued:
                log.info("fleet: taking up %d undecided traces begun before this replica joined", queued)
        if self._orphans is None:
            return
        deadline, lost_at_ns, lost = self._orphans
        if lost:
            notes = await asyncio.to_thread(read_handovers, self._fleet, lost, lost_at_ns)
            listed = {trace for traces in notes.values() for trace in traces}
            if listed:
                queued = await self.take_up_orphans(lost_at_ns, only=listed, counted=self._count_handed_over)
                log.info("fleet: taking up %d handed-over traces (%s stopped on purpose)", queued, ", ".join(notes))
            if set(notes) == set(lost):  # every lost replica left on purpose and said what it held
                self._orphans = None
                return
            self._orphans = (deadline, lost_at_ns, [])
        if time.monotonic() >= deadline:
            queued = await self.take_up_orphans(lost_at_ns, counted=self._count_taken)
            if queued:
                log.info("fleet: taking up %d traces a lost replica may have been assembling", queued)
            self._orphans = None

    def _count_recovered_at_start(self, adopted: int) -> None:
        self.recovered_at_start += adopted

    def _count_handed_over(self, adopted: int) -> None:
        self.handed_over += adopted

    def _count_taken(self, adopted: int) -> None:
        self.taken += adopted

    async def take_up_orphans(
        self, lost_at_ns: int, *, only: Collection[str] | None = None, counted: Callable[[int], None] | None = None
    ) -> int:
        """Queue the unhandled traces of a lost replica that this replica owns for adoption; how many were queued.

        ``only``: the trace ids a replica that left on purpose listed, read as listed (one of a trace's runs may
        be decided and another not). Otherwise the traces storage lists as undecided whose spans all began
        before the loss (``undecided_trace_ids``), looking back from the latest span stored (a fleet started
        again after a downtime). Reading the latest 10,000 recent traces instead found none of a lost replica's
        once 10,000 newer ones had come in during the wait: at 170 traces/s over a 60 s ``max_wait_s``.

        They are adopted in waves (``scoring.recovery_waves``), each only as far as the waiting traces stay
        under half of run assembly's bounds, so a long list (a whole fleet started again after a crash) does not
        evict live traffic. Ownership is looked at again as each wave is read; ``counted`` is told how many
        each wave adopted.
        """
        source = StoredSpanSource(self._live.store)
        if only is None:
            since = self._live.assembler.recovery_since(await asyncio.to_thread(source.latest_span_ns, time.time_ns()))
            listed = await asyncio.to_thread(source.undecided_trace_ids, since, lost_at_ns)
        else:
            listed = list(only)
        ids = [trace_id for trace_id in listed if self._fleet.owns(f"trace:{trace_id}")]

        def orphans(traces: list[RecoveredTrace], handled: Mapping[str, Mapping[str, bool]]) -> list[RecoveredTrace]:
            return [
                trace
                for trace in traces
                if self._fleet.owns(f"trace:{trace.trace_id}")
                and all(s.start_time_ns < lost_at_ns for s in trace.spans)
                and not _all_handled(trace.trace_id, handled)
            ]

        return await self._live.recovery_waves.add(source, ids, keep=orphans, adopted=counted)


def _all_handled(trace_id: str, handled: Mapping[str, Mapping[str, bool]]) -> bool:
    """Every subject of the trace was decided and needs nothing more (a trace never decided is not)."""
    marks = handled.get(trace_id, {})
    return bool(marks) and all(marks.values())
