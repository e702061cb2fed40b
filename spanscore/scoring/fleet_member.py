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

Sessions are scored under the fence (``spanscore.fleet.fence``): only while this replica can prove its Keeper
session live and owns them, each scoring recorded with the turns it covered, its scores written only while
its grant holds. A new token (the session was lost: a cut, a pause) drops every session held, and sessions
are taken up again from the store like a joiner's, skipping turns a recorded scoring covered. A replica that
stops on purpose hands its unready runs over (``hand_over``); the survivors take them up at once.

Every run and session is claimed in the store before its judge call (``scoring.fleet_claims``); a replica
leaves a run another live replica claimed or scored (a batch sent again after a kill), and takes it up once
that replica is gone without a score. A session's recorded scoring covers its turns only on the same terms.

Caps: each replica holds 1/N of every ``max_per_minute``. A daily budget is leased in small slices
(``scoring.fleet_budgets``); its sampling rate is paced on its share of what the whole fleet has left today
(the shared ``scores`` table says what was spent, read every ``share_sync_s``). With Keeper unreachable the
last membership stays in force, so owners and shares hold still until it answers again, and after
``session_timeout_s`` budgets go on the local share (``fleet.expected_replicas``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet
from spanscore.fleet.fence import FenceToken, Grant
from spanscore.fleet.handover import write_handover
from spanscore.pipeline import Background, first_set
from spanscore.run import Run
from spanscore.scoring.claim_check import Taken
from spanscore.scoring.fleet_budgets import FleetBudgets
from spanscore.scoring.fleet_claims import FleetClaims
from spanscore.scoring.fleet_lost_runs import LostRuns
from spanscore.scoring.fleet_steps import FleetSteps
from spanscore.storage.reads.recovery import (
    handled_runs,
    session_turn_keys,
    spend_since,
    stored_turn_runs,
    unscored_sessions,
)

if TYPE_CHECKING:
    from spanscore.scoring.live import LiveScoring

log = logging.getLogger(__name__)

SHARE_SIZING = "share sizing"
BURST_LEASE_WAIT_S = 1.0
"""How long a burst of ready runs waits for a budget lease before it is decided on what is held."""
LEASE_POLL_S = 0.05
TURN_WINDOW_S = 900.0
"""How far back turns are looked for, by when the replica that received them made them ready and stored them."""


class FleetMember:
    def __init__(
        self, live: LiveScoring, fleet: Fleet, config: FleetConfig, *, instance: str = "", alive_window_s: float = 3.0
    ) -> None:
        self._live = live
        self.claims = FleetClaims(live.store, fleet, instance, alive_window_s)
        self._fleet = fleet
        self._config = config
        self._members: list[str] = []
        self._seen: dict[tuple[str, str], float] = {}
        """(session id, run id) turns already taken up, with when: a forgotten scored session stays scored.

        Cleared on a new token: the sessions holding those turns were dropped, and a turn taken up but never
        scored is taken up again unless a recorded scoring covered it (``_uncovered``). The store's last decision
        cannot tell: a turn made ready before a scoring but stored after it looks settled by that scoring."""
        self._background = Background("fleet-member")
        self._budget_state = Background("fleet-budget-state")
        self._wake = asyncio.Event()
        self._loop_ref: asyncio.AbstractEventLoop | None = None
        self.turns_taken = 0
        self.sessions_taken_over = 0
        self.sessions_released = 0
        self._steps = FleetSteps()
        self.lost_runs = LostRuns(live, fleet, config)
        self._keeper_members: list[str] = []
        self._token: FenceToken | None = None
        """The fence token this replica's held sessions were taken up under; a new one means they may have moved."""
        self._joined_before = False
        """Whether this process saw its first membership (its start-up recovery is scheduled then, once)."""
        fleet.on_members(self._members_changed)
        live.dispatcher.owns_session = self.owns_session
        live.dispatcher.sessions_shared = True
        live.dispatcher.fence = self
        live.dispatcher.may_poll_sessions = self._current
        self.sessions_dropped_on_new_token = 0
        live.engine.use_leases()
        self.budgets = FleetBudgets(live, fleet, config, instance=instance)

    def _current(self) -> bool:
        """The fence is live, under the token this replica's held sessions were taken up with."""
        token = self._fleet.fence.token()
        return token is not None and token == self._token

    def owns_session(self, session_id: str) -> bool:
        """Owned as last seen, once this replica held a token: its turns join the session here.

        Holding turns is not acting on them: a session is scored only under a grant (``grant``), and a new
        token drops every session held. So a lease that lapses for a moment (a slow renewal) does not turn
        arriving turns into ones the owner only learns of from the store later.
        """
        return self._token is not None and self._fleet.owns(f"session:{session_id}")

    # -- the dispatcher's SessionFence (``scoring.fleet_gate``): "may I still?" --------------------------------

    def grant(self, session_id: str) -> object | None:
        return self._fleet.fence.grant(f"session:{session_id}") if self._current() else None

    def still(self, grant: object) -> bool:
        return isinstance(grant, Grant) and self._fleet.fence.still(grant)

    def covered(self, session_ids: Sequence[str]) -> dict[str, set[str]]:
        return self.claims.covered(session_ids)

    def superseded(self, session_id: str, turns: set[str]) -> bool:
        return bool(self.claims.covered([session_id]).get(session_id, set()) - turns)

    def claimant(self) -> dict[str, str]:
        return self.claims.claimant()

    def runs_unproven(self) -> bool:
        return not self._current()

    def decided(self, trace_ids: Sequence[str]) -> dict[str, set[str]]:
        return {trace: set(subjects) for trace, subjects in handled_runs(self._live.store, trace_ids).items()}

    def taken(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Taken]:
        return self.claims.taken(keys)

    def owns_run(self, trace_id: str) -> bool:
        return self.claims.owns_run(trace_id)

    def claim(self, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        return self.claims.claim(keys)

    async def make_room(self, runs: Sequence[Run]) -> None:
        """Lease for a burst before it is decided (``FleetBudgets.top_up``); a failure leaves what is held."""
        if self.budgets.covers(len(runs)):  # the usual case: what is held pays for the whole batch
            return
        demand = self._live.engine.budget_demand(runs)
        if not demand:
            return
        began = time.monotonic()
        if not await self._may_lease_soon(began + BURST_LEASE_WAIT_S):
            return
        left = began + BURST_LEASE_WAIT_S - time.monotonic()
        try:  # bounded: a Keeper that went silent must not hold the dispatch (a lease left behind is never spent)
            await asyncio.wait_for(self.budgets.top_up(self._members, demand=demand), max(0.1, left))
        except Exception as exc:  # Keeper or the store did not answer in time: decide on what is held
            log.warning("fleet: budget lease for a burst of %d runs not taken: %s", len(runs), exc)

    async def _may_lease_soon(self, deadline: float) -> bool:
        """Whether a lease may be taken now, or before ``deadline`` while Keeper answers (a replica rejoining).

        Back from a lost session a replica holds nothing (it forfeited its leases) and leases again only once
        it is a member with a proven session, a moment later: a burst in that moment would be refused.
        """
        for _ in range(int(BURST_LEASE_WAIT_S / LEASE_POLL_S)):
            if self.budgets.may_lease(self._members):
                return True
            fleet = self._fleet
            if not fleet.connected or fleet.refused is not None or self.budgets.local_share:
                return False
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(LEASE_POLL_S)
        return self.budgets.may_lease(self._members)

    def _members_changed(self, members: list[str]) -> None:
        """On a Keeper thread, for every change Keeper reports (none is missed between two rounds)."""
        lost = set(self._keeper_members) - set(members)
        self._keeper_members = members
        if self._loop_ref is not None:  # owners and shares follow at once, not at the next round
            self._loop_ref.call_soon_threadsafe(self._wake.set)
        if lost:  # a replica was lost: its unready runs need a new home
            self.lost_runs.lost(lost)

    @property
    def poll_failures(self) -> int:
        """Steps of fleet rounds that failed (each is counted per step in ``metrics``)."""
        return self._steps.total_failures

    @property
    def orphan_traces_taken(self) -> int:
        return self.lost_runs.taken

    @property
    def handed_over_traces(self) -> int:
        return self.lost_runs.handed_over

    @property
    def members(self) -> list[str]:
        """The members this replica's sessions and shares are sized for (the last change it acted on)."""
        return list(self._members)

    async def start(self) -> None:
        self._loop_ref = asyncio.get_running_loop()
        self._background.start(self._loop)
        self._budget_state.start(self._follow_budgets)

    async def shutdown(self) -> None:
        await self._background.stop()
        await self._budget_state.stop()

    async def _loop(self) -> None:
        """Each step on its own (``FleetSteps``): one that fails is retried next round, and the others still run."""
        next_turns = next_share = 0.0
        steps = self._steps
        while not self._background.stopping.is_set():
            now = time.monotonic()
            await steps.run("member change", self._follow_members)
            if now >= next_turns:
                next_turns = now + self._config.turn_poll_s
                await steps.run("turn take-up", self.take_up_turns)
            if now >= next_share or steps.failing(SHARE_SIZING):
                next_share = now + self._config.share_sync_s
                await steps.run(SHARE_SIZING, self.sync_shares)
            await steps.run("budget leases", self.top_up_leases)
            if self._current():
                await steps.run("lost runs", self.lost_runs.take_up)
                await steps.run("claimed runs", self._live.dispatcher.take_up_claims)
            await self._pause(min(0.5, self._config.turn_poll_s))

    async def _pause(self, seconds: float) -> None:
        """Until the next round: ``seconds``, or sooner when stopping or the members changed."""
        await first_set(self._background.stopping, self._wake, timeout_s=seconds)
        self._wake.clear()

    async def _follow_members(self) -> None:
        """On a change of members or of token: release what moved away, take up the open sessions now ours.

        A new token means this replica's Keeper session was lost (a cut, a pause): the others may have taken
        its sessions over and scored them meanwhile, so it forgets every session it held and takes up, like a
        joining replica, only what the store says is still open and its own.
        """
        token = self._fleet.fence.token()
        if not self._fleet.joined or token is None:
            return
        if token != self._token:
            if self._token is not None:
                self.sessions_dropped_on_new_token += self._live.sessions.release(lambda _: False)
                self._seen.clear()  # turns taken up went with their sessions: the records say which are covered
                self._members = []
                log.warning("fleet: Keeper session was lost; sessions held before are taken up again from the store")
            self._token = token
        members = self._fleet.members()
        if members == self._members:
            return
        await self._steps.run(SHARE_SIZING, self.sync_shares)  # a failure is retried next round, and does not
        # hold the change back: shares sized late beat sessions nobody takes up (slices still cap the budgets)
        self._members = members
        if not self._joined_before:  # this process's first membership: its start-up recovery, fleet-wide
            self._joined_before = True
            if self._live.config.recover_on_start:
                self.lost_runs.joined(alone=members == [self._fleet.replica])
        tracker = self._live.sessions
        released = tracker.release(self.owns_session)
        self.sessions_released += released
        if not self._live.dispatcher.rules.scores_sessions:
            return
        config = tracker.config
        since = time.time_ns() - int(max(2 * config.quiet_period_s, config.keep_scored_s) * 1e9)
        runs = await asyncio.to_thread(unscored_sessions, self._live.store, since)
        mine = [run for run in runs if run.session_id and self.owns_session(run.session_id)]
        covered = await asyncio.to_thread(self.claims.covered, [r.session_id or "" for r in mine])
        mine = [run for run in mine if run.run_id not in covered.get(run.session_id or "", ())]  # scored already
        # Scored right now by its previous owner, whose record may still wait in its writer: left to it (its
        # claim is stored before its judge call); taken up at the next change if that replica dies first.
        busy = await asyncio.to_thread(self.claims.scoring_elsewhere, [r.session_id or "" for r in mine])
        mine = [run for run in mine if run.session_id not in busy]
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
        keys = await self._uncovered(keys)
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

    async def _uncovered(self, keys: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        """The turn keys no recorded scoring covered, of sessions no other live replica is scoring now.

        A finished session taken up is not reopened (a join); one under way elsewhere waits for its record.
        """
        candidates = {session for session, _, run in keys if (session, run) not in self._seen}
        owned = [session for session in candidates if self.owns_session(session)]
        covered = await asyncio.to_thread(self.claims.covered, owned) if owned else {}
        busy = await asyncio.to_thread(self.claims.scoring_elsewhere, owned) if owned else set()
        now = time.monotonic()
        kept = []
        for session, trace, run in keys:
            if run in covered.get(session, ()):
                self._seen.setdefault((session, run), now)
            elif session not in busy:  # a scoring under way elsewhere: asked again next round
                kept.append((session, trace, run))
        return kept

    async def hand_over(self) -> None:
        """Stop on purpose (SIGTERM): finish what was made ready, note what was not, then leave the fleet.

        Nothing more becomes ready here; what was is scored and stored; the traces still unready are listed
        in a note (``fleet.handover``) and the replica leaves, so their new owners take them and this
        replica's open sessions up from the store at once.
        """
        await self.shutdown()
        await self._live.shutdown()
        # Traces still being assembled, and those whose ready runs the shutdown had no time to decide.
        unready = await self._live.assembly.call(self._live.assembler.unready_trace_ids)
        pending = list(dict.fromkeys([*unready, *self._live.left_undecided()]))
        if pending and self._fleet.connected:
            try:
                listed = await asyncio.to_thread(write_handover, self._fleet, pending)
                log.info("fleet: handed over %d traces still being assembled", listed)
            except Exception as exc:  # Keeper gone: the others wait for these as for a lost replica
                log.warning("fleet: handover note not written, the others take these runs up later: %s", exc)
        if self._fleet.state != "stopped":
            await asyncio.to_thread(self.budgets.release_all)  # scoring drained: every spend is stored by now
            await asyncio.to_thread(self._fleet.stop)

    def _prune(self, now: float) -> None:
        old = [key for key, seen in self._seen.items() if now - seen > TURN_WINDOW_S]
        for key in old:
            del self._seen[key]

    async def top_up_leases(self) -> None:
        """Budgets: lease slices while a member (``scoring.fleet_budgets``; the local share is ``_follow_budgets``)."""
        if self.budgets.may_lease(self._members):
            await self.budgets.top_up(self._members)

    async def _follow_budgets(self) -> None:
        """The budgets' Keeper state, on a task of its own: no Keeper call in a member round can hold it back."""
        tick = min(0.25, self._config.session_timeout_s / 8)
        while not self._budget_state.stopping.is_set():
            await self._steps.run("budget state", self.budgets.follow)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._budget_state.stopping.wait(), tick)

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
            engine.learn_costs(found)
        engine.set_fleet_share(members, spent)

    def metrics(self) -> dict[str, float]:
        return {
            "fleet_session_turns_taken": float(self.turns_taken),
            "fleet_sessions_taken_over": float(self.sessions_taken_over),
            "fleet_sessions_released": float(self.sessions_released),
            "fleet_sync_failures": float(self.poll_failures),
            **self._steps.metrics(),
            "fleet_orphan_traces_taken": float(self.lost_runs.taken),
            "fleet_traces_recovered_at_join": float(self.lost_runs.recovered_at_start),
            "fleet_sessions_fenced": float(self._live.dispatcher.sessions_fenced),
            "fleet_sessions_reopened": float(self._live.dispatcher.sessions_reopened),
            "fleet_runs_fenced": float(self._live.dispatcher.gate.runs_fenced),
            "fleet_sessions_skipped_as_scored": float(self._live.dispatcher.sessions_skipped_as_scored),
            "fleet_handed_over_traces_taken": float(self.lost_runs.handed_over),
            "fleet_sessions_dropped_on_new_token": float(self.sessions_dropped_on_new_token),
            "fleet_runs_claimed_elsewhere": float(self._live.dispatcher.gate.claims.left_to_others),
            "fleet_claimed_runs_taken_up": float(self._live.dispatcher.gate.claims.taken_up),
            "fleet_claim_races_lost": float(self._live.dispatcher.gate.claims.raced),
            "fleet_claim_failures": float(self._live.dispatcher.gate.claims.failures),
            **self.budgets.metrics(),
        }
