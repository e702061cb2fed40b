"""A fleet replica's daily judge budgets: slices leased from Keeper, given back on stop, a local share without it.

- **Joined**: before a budget's lease runs low, lease another slice (``fleet.leases``): small slices of what is
  left after the day's stored spend and every live replica's unspent holding, never before this replica has
  seen the member list. A fleet round comes every half second, and a run refused over budget is not asked
  again, so a burst of ready runs also leases before it is decided (``demand``): enough for the whole burst
  when the fleet has it, not only a slice.
- **Session lost** (Keeper expired it, so the others reclaimed what it held): what it held unspent is given up.
- **Cut from Keeper**: ``fleet.session_timeout_s`` after the last round trip that proved its session (the
  fence's, ``proven_at``; from start when it never had one), the **local share**, at most
  ``1/fleet.expected_replicas`` of what the fleet had left (read from the shared store), so judged runs go on;
  ``local_share`` is true, and /readyz, /metrics and ``spanscore status`` say so. When Keeper answers again,
  the local share ends and leases resume from what is left. The cut is counted from the proof, not from when
  the Keeper client noticed it: through a partition the client says "connected" until its read timeout.
  ``follow`` decides this on a task of its own (``FleetMember``), which makes no Keeper call, so a lease call
  waiting on a silent Keeper cannot hold it back.
- **Stop**: every holding is released, so the others can lease it at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import Fleet
from spanscore.fleet.fence import lease_clock
from spanscore.fleet.leases import SLICES, registered, release, take_lease
from spanscore.storage.reads.recovery import spend_since

if TYPE_CHECKING:
    from spanscore.scoring.live import LiveScoring

log = logging.getLogger(__name__)


class FleetBudgets:
    def __init__(self, live: LiveScoring, fleet: Fleet, config: FleetConfig, *, instance: str = "") -> None:
        self._live = live
        self._instance = instance
        """This process (its heartbeats' and claims' instance): back from a lost session, it takes its forfeit back."""
        self._fleet = fleet
        self._config = config
        self._cut_since = lease_clock()
        """From when this replica counts itself cut (``lease_clock``): its last proof of a session, or the last
        moment it was connected without being a member (start counts: it has no session yet)."""
        self._losses = fleet.session_losses
        self._next_check = 0.0
        self.local_share = False
        self.leases_taken = 0
        self.leases_released = 0
        self.burst_leases = 0
        """Leases taken for a burst of ready runs, before deciding them (not in a fleet round)."""
        self._leasing = asyncio.Lock()
        """One lease at a time: each registers this replica's whole holding, so two at once would lose one."""

    async def follow(self) -> None:
        """Follow Keeper's state (no Keeper call): forfeit a lost session's holdings, go on or off the local share."""
        engine = self._live.engine
        if self._fleet.session_losses != self._losses:  # the fleet reclaimed what this replica held
            self._losses = self._fleet.session_losses
            for rule in engine.budget_rules():
                budget = engine.budget(rule)
                if budget is not None:
                    budget.forfeit()
        if self._fleet.joined:  # connected with a member node: cut, if at all, since the fence's last proof
            self._cut_since = max(self._cut_since, self._fleet.fence.proven_at or self._cut_since)
        elif self._fleet.connected:  # connected but no member yet (joining, or waiting for its name)
            self._cut_since = lease_clock()
        if not self._fleet.connected:
            if not self.local_share and lease_clock() - self._cut_since >= self._config.session_timeout_s:
                await self._go_local()
            return
        if self.local_share:
            self.local_share = False
            for rule in engine.budget_rules():
                budget = engine.budget(rule)
                if budget is not None:
                    budget.forfeit()  # the local allowance ends; leases resume from what the fleet has left
            log.warning("fleet: Keeper answers again; judge budgets leave the local share and lease again")

    def may_lease(self, members: list[str]) -> bool:
        """Whether a lease round may go to Keeper now: a member, proven live lately, not on the local share."""
        return bool(members) and self._fleet.joined and self._fleet.fence.live() and not self.local_share

    async def _go_local(self) -> None:
        engine = self._live.engine
        spent = await self._fleet_spent()
        expected = self._config.expected_replicas
        for rule in engine.budget_rules():
            budget = engine.budget(rule)
            if budget is not None and budget.leased is not None:
                budget.go_local(spent.get(rule, 0.0), expected)
        self.local_share = True
        log.warning(
            "fleet: no Keeper session for %.0f s: judge budgets on the local share, at most 1/%d "
            "(fleet.expected_replicas) of what the fleet has left today each",
            lease_clock() - self._cut_since,
            expected,
        )

    async def _fleet_spent(self) -> dict[str, float]:
        """Today's spend per budget rule in the shared store, in each budget's unit."""
        engine = self._live.engine
        rules = engine.budget_rules()
        day_start = engine.budget_day_start()
        if not rules or day_start is None:
            return {}
        found = await asyncio.to_thread(spend_since, self._live.store, rules, int(day_start * 1e9))
        return {rule: engine.in_budget_unit(rule, usd, tokens) for rule, (usd, tokens, _) in found.items()}

    def covers(self, runs: int) -> bool:
        """Whether every leased budget already pays for ``runs`` more runs at its known cost.

        A burst's demand per rule is at most its number of runs, so then no burst lease is needed, and the
        dispatch need not build each run's filter subject to ask (``SamplingEngine.budget_demand``).
        """
        engine = self._live.engine
        for rule in engine.budget_rules():
            budget = engine.budget(rule)
            if budget is None or budget.leased is None:
                continue
            cost = budget.cost_per_run
            if cost is None or budget.headroom() < runs * cost:
                return False
        return True

    async def top_up(self, members: list[str], *, demand: Mapping[str, float] | None = None) -> float:
        """Lease another slice of every budget that runs low, or whose holding Keeper lost; what was granted.

        Whether Keeper still holds this replica's holding is read every ``share_sync_s``, so after Keeper lost
        its data every replica registers what it holds within that time. ``demand``: ready runs about to be
        decided, per rule (``SamplingEngine.budget_demand``); only those rules are looked at, and one whose
        headroom cannot pay for its runs leases at least what they cost (when the fleet has it).
        """
        async with self._leasing:
            return await self._top_up(members, demand)

    async def _top_up(self, members: list[str], demand: Mapping[str, float] | None) -> float:
        engine = self._live.engine
        share = max(len(members), self._config.expected_replicas)
        granted, spent = 0.0, None
        check = not demand and time.monotonic() >= self._next_check  # is each holding still in Keeper? (a round's)
        if check:
            self._next_check = time.monotonic() + self._config.share_sync_s
        for rule in engine.budget_rules() if demand is None else list(demand):
            budget = engine.budget(rule)
            if budget is None or budget.leased is None:
                continue
            cost = budget.cost_per_run or 0.0
            day = budget.day
            # Topped up while a whole first slice is still unspent: a burst of runs between two rounds finds
            # room (a run refused over budget is not asked again), and a replica holds about two slices.
            low = budget.headroom() < max(2 * cost, budget.configured_limit / (SLICES * share))
            wanted = 0.0
            if demand is not None:  # a burst: enough for its runs (a first slice while no run's cost is known)
                wanted = demand[rule] * cost if cost else budget.configured_limit / (SLICES * share)
                low = budget.headroom() < wanted
            if not low and (not check or await asyncio.to_thread(registered, self._fleet, rule, day)):
                continue
            spent = await self._fleet_spent() if spent is None else spent
            chunk = await asyncio.to_thread(
                take_lease, self._fleet, rule, day, budget.configured_limit, unspent=budget.unspent,
                spent=budget.spent, fleet_spent=spent.get(rule, 0.0), members=members,
                expected=self._config.expected_replicas, instance=self._instance,
                minimum=max(2 * cost, budget.configured_limit / (20 * share), wanted - budget.headroom()),
            )  # fmt: skip
            current = engine.budget(rule)  # the rules may have changed meanwhile
            if chunk > 0 and current is not None:
                current.grant(chunk, day)
                granted += chunk
                self.leases_taken += 1
                self.burst_leases += 1 if demand else 0
        return granted

    def release_all(self) -> None:
        """On stop (blocking: Keeper calls): give back every holding, so the others may lease it at once."""
        engine = self._live.engine
        for rule in engine.budget_rules():
            budget = engine.budget(rule)
            if budget is None or budget.leased is None or not self._fleet.connected:
                continue
            try:
                release(self._fleet, rule, budget.day, budget.spent)
                self.leases_released += 1
            except Exception as exc:  # Keeper reclaims it when the session ends anyway
                log.warning(
                    "fleet: budget lease of %s not returned (%s); Keeper reclaims it with the session", rule, exc
                )

    def metrics(self) -> dict[str, float]:
        return {
            "fleet_budget_leases_taken": float(self.leases_taken),
            "fleet_budget_burst_leases": float(self.burst_leases),
            "fleet_budget_local_share": 1.0 if self.local_share else 0.0,
        }
