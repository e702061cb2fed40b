"""A fleet replica's part of live scoring: the sessions it owns, and its share of every cap.

The Collector routes by trace id, so the turns of one conversation land on different replicas. Each replica
stores every turn it assembles (``scored_runs``, the shared store) and scores only the sessions it owns
(rendezvous hashing over the live members, ``spanscore.fleet``). The owner learns of the turns other
replicas stored by reading their keys every ``turn_poll_s`` and the bodies of those it lacks, and reads a
session's stored turns again before scoring it, so the score covers every turn whoever received it.

When the members change, a replica forgets the sessions it no longer owns and takes up, from the store, the
open sessions it now owns (those of a lost replica included): they are scored once, by their new owner,
after their quiet period.

Runs a lost replica was still assembling (their spans stored, the run not yet ready) are orphans: once every
live replica has had ``runs.max_wait_s`` to make ready and decide what it held, each survivor reads back the
unhandled traces that began before the loss and that it owns by trace id among the live members, and
assembles and scores them as a restarted process would (storage says which runs were handled already).

Caps: each replica holds 1/N of every ``max_per_minute``. A daily budget is leased in small slices
(``scoring.fleet_budgets``); its sampling rate is paced on its share of what the whole fleet has left today
(the shared ``scores`` table says what was spent, read every ``share_sync_s``). With Keeper unreachable the
last membership stays in force, so owners and shares hold still until it answers again, and after
``session_timeout_s`` budgets go on the local share (``fleet.expected_replicas``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet
from spanscore.pipeline import Background
from spanscore.runs.recovery import StoredSpanSource
from spanscore.scoring.fleet_budgets import FleetBudgets
from spanscore.storage.reads.recovery import session_turn_keys, spend_since, stored_turn_runs, unscored_sessions

if TYPE_CHECKING:
    from spanscore.scoring.live import LiveScoring

log = logging.getLogger(__name__)

TURN_WINDOW_S = 900.0
"""How far back (by run start) turns are looked for: a run may be stored this long after it started."""


class FleetMember:
    def __init__(self, live: LiveScoring, fleet: Fleet, config: FleetConfig) -> None:
        self._live = live
        self._fleet = fleet
        self._config = config
        self._members: list[str] = []
        self._seen: dict[tuple[str, str], float] = {}
        """(session id, run id) turns already taken up, with when: a forgotten scored session stays scored."""
        self._background = Background("fleet-member")
        self._wake = asyncio.Event()
        self._loop_ref: asyncio.AbstractEventLoop | None = None
        self.turns_taken = 0
        self.sessions_taken_over = 0
        self.sessions_released = 0
        self.poll_failures = 0
        self.orphan_traces_taken = 0
        self._orphans: tuple[float, int] | None = None
        """After a replica was lost: (when to look, monotonic) and the loss time (Unix ns) traces began before."""
        self._keeper_members: list[str] = []
        fleet.on_members(self._members_changed)
        live.dispatcher.owns_session = self.owns_session
        live.dispatcher.sessions_shared = True
        live.engine.use_leases()
        self.budgets = FleetBudgets(live, fleet, config)

    def owns_session(self, session_id: str) -> bool:
        return self._fleet.owns(f"session:{session_id}")

    def _members_changed(self, members: list[str]) -> None:
        """On a Keeper thread, for every change Keeper reports (none is missed between two rounds)."""
        lost = set(self._keeper_members) - set(members)
        self._keeper_members = members
        if self._loop_ref is not None:  # owners and shares follow at once, not at the next round
            self._loop_ref.call_soon_threadsafe(self._wake.set)
        if lost:  # a replica was lost: its unready runs need a new home once the others decided theirs
            assembly = self._live.assembler.config
            wait_s = assembly.max_wait_s + assembly.quiet_period_s + self._config.turn_poll_s
            self._orphans = (time.monotonic() + wait_s, time.time_ns())

    @property
    def members(self) -> list[str]:
        """The members this replica's sessions and shares are sized for (the last change it acted on)."""
        return list(self._members)

    async def start(self) -> None:
        self._loop_ref = asyncio.get_running_loop()
        self._background.start(self._loop)

    async def shutdown(self) -> None:
        await self._background.stop()

    async def _loop(self) -> None:
        next_turns = next_share = 0.0
        while not self._background.stopping.is_set():
            now = time.monotonic()
            try:
                await self._follow_members()
                if now >= next_turns:
                    next_turns = now + self._config.turn_poll_s
                    await self.take_up_turns()
                if now >= next_share:
                    next_share = now + self._config.share_sync_s
                    await self.sync_shares()
                await self.top_up_leases()
                if self._orphans is not None and now >= self._orphans[0]:
                    await self.take_up_orphans(self._orphans[1])
                    self._orphans = None
            except Exception as exc:  # the store or Keeper is down: try again next round, never stop
                self.poll_failures += 1
                log.warning("fleet: session and share sync failed, retrying: %s", exc)
            await self._pause(min(0.5, self._config.turn_poll_s))

    async def _pause(self, seconds: float) -> None:
        """Until the next round: ``seconds``, or sooner when stopping or the members changed."""
        waits = [asyncio.ensure_future(self._background.stopping.wait()), asyncio.ensure_future(self._wake.wait())]
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        self._wake.clear()

    async def _follow_members(self) -> None:
        """On a change of members: release what moved away, take up the open sessions now ours."""
        if not self._fleet.joined:
            return
        members = self._fleet.members()
        if members == self._members:
            return
        await self.sync_shares()  # sized before the change counts as seen; a failure retries it next round
        self._members = members
        tracker = self._live.sessions
        released = tracker.release(self.owns_session)
        self.sessions_released += released
        if not self._live.dispatcher.rules.scores_sessions:
            return
        config = tracker.config
        since = time.time_ns() - int(max(2 * config.quiet_period_s, config.keep_scored_s) * 1e9)
        runs = await asyncio.to_thread(unscored_sessions, self._live.store, since)
        mine = [run for run in runs if run.session_id and self.owns_session(run.session_id)]
        taken = tracker.restore([run for run in mine if not tracker.holds(run.session_id or "")], time.time_ns())
        self.sessions_taken_over += taken
        log.info(
            "fleet: members %s; sessions released=%d taken up=%d", ", ".join(members), released, taken
        )  # fmt: skip

    async def take_up_turns(self) -> int:
        """Add the turns other replicas stored for sessions this replica owns; how many were new."""
        if not self._live.dispatcher.rules.scores_sessions:
            return 0
        tracker = self._live.sessions
        since = time.time_ns() - int(TURN_WINDOW_S * 1e9)
        keys = await asyncio.to_thread(session_turn_keys, self._live.store, since)
        wanted = [
            (trace, run)
            for session, trace, run in keys
            if (session, run) not in self._seen and self.owns_session(session) and not tracker.knows(session, run)
        ]
        runs = await asyncio.to_thread(stored_turn_runs, self._live.store, wanted) if wanted else []
        now_ns, now = time.time_ns(), time.monotonic()
        added = 0
        for run in runs:
            session = run.session_id or ""
            self._seen[session, run.run_id] = now
            if self.owns_session(session) and not tracker.knows(session, run.run_id):
                added += tracker.add(run, now_ns, needs_history=True)
        for session, _, run_id in keys:  # turns held already count as seen, so a forgotten one stays so
            if tracker.knows(session, run_id):
                self._seen.setdefault((session, run_id), now)
        self._prune(now)
        self.turns_taken += added
        return added

    async def take_up_orphans(self, lost_at_ns: int) -> int:
        """Assemble the unhandled traces of a lost replica that this replica owns now; how many were taken."""
        source = StoredSpanSource(self._live.store)
        assembler = self._live.assembler
        since = assembler.recovery_since(time.time_ns())
        found = await asyncio.to_thread(lambda: list(source.recent_traces(since)))
        mine = [
            trace
            for trace in found
            if self._fleet.owns(f"trace:{trace.trace_id}") and all(s.start_time_ns < lost_at_ns for s in trace.spans)
        ]
        held = set(assembler.pending_trace_ids())
        mine = [trace for trace in mine if trace.trace_id not in held]
        if not mine:
            return 0
        handled = await asyncio.to_thread(source.handled_runs, [trace.trace_id for trace in mine])
        orphans = [trace for trace in mine if not _all_handled(trace.trace_id, handled)]
        taken = assembler.adopt(orphans, handled, time.time_ns())
        self.orphan_traces_taken += taken
        log.info("fleet: took up %d traces a lost replica was assembling", taken)
        return taken

    def _prune(self, now: float) -> None:
        old = [key for key, seen in self._seen.items() if now - seen > TURN_WINDOW_S]
        for key in old:
            del self._seen[key]

    async def top_up_leases(self) -> None:
        """Budgets: lease slices, or the local share without Keeper (``scoring.fleet_budgets``)."""
        await self.budgets.round(self._members)

    @property
    def local_share(self) -> bool:
        return self.budgets.local_share

    async def sync_shares(self) -> None:
        """Size this replica's caps from the live members and the fleet's spend today."""
        engine = self._live.engine
        members = max(1, len(self._fleet.members()))
        rules = engine.budget_rules()
        day_start = engine.budget_day_start()
        spent: dict[str, tuple[float, int]] = {}
        if rules and day_start is not None:
            found = await asyncio.to_thread(spend_since, self._live.store, rules, int(day_start * 1e9))
            spent = {rule: (usd, tokens) for rule, (usd, tokens, _) in found.items()}
        self._live.engine.set_fleet_share(members, spent)

    def metrics(self) -> dict[str, float]:
        return {
            "fleet_session_turns_taken": float(self.turns_taken),
            "fleet_sessions_taken_over": float(self.sessions_taken_over),
            "fleet_sessions_released": float(self.sessions_released),
            "fleet_sync_failures": float(self.poll_failures),
            "fleet_orphan_traces_taken": float(self.orphan_traces_taken),
            **self.budgets.metrics(),
        }


def _all_handled(trace_id: str, handled: Mapping[str, Mapping[str, bool]]) -> bool:
    """Every subject of the trace was decided and needs nothing more (a trace never decided is not)."""
    marks = handled.get(trace_id, {})
    return bool(marks) and all(marks.values())
