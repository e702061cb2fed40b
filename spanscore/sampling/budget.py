"""Per-rule caps: a token bucket for bursts and a daily judge budget that lowers the rate.

The sampling engine owns one ``TokenBucket`` per rule with ``max_per_minute``
and one ``DailyBudget`` per rule with ``budget``. Both read time from an
injected clock (Unix seconds) so tests can drive them. In one process they hold
the whole limit, and with the embedded store a restart takes up the day's spend
recorded in ``scores``. In a fleet each replica holds a share that the fleet
member sets (``set_share`` / ``set_limit``): a bucket refills at its share of the
rate, and a budget may spend its share of what the whole fleet has left today.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]
"""Returns the current time in Unix seconds (``time.time`` in the service)."""

SECONDS_PER_DAY = 86_400


class TokenBucket:
    """Allows ``per_minute`` takes a minute on average, in bursts of up to ``per_minute``.

    The bucket starts full, so a quiet service can score the first burst at
    once; afterwards tokens come back at ``per_minute / 60`` a second.
    """

    def __init__(self, per_minute: int, *, clock: Clock = time.time) -> None:
        if per_minute <= 0:
            raise ValueError(f"per_minute must be positive, got {per_minute}")
        self.per_minute = per_minute
        self._capacity = float(per_minute)
        self._refill_per_second = per_minute / 60.0
        self._clock = clock
        self._tokens = self._capacity
        self._updated = clock()

    def set_share(self, fraction: float) -> None:
        """Hold ``fraction`` of the configured rate (a fleet of N: 1/N each, so the fleet keeps the cap)."""
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"share must be in (0, 1], got {fraction}")
        self._refill()
        self._capacity = max(1.0, self.per_minute * fraction) if fraction < 1.0 else float(self.per_minute)
        self._refill_per_second = self.per_minute * fraction / 60.0
        self._tokens = min(self._tokens, self._capacity)

    @property
    def available(self) -> float:
        """Tokens that could be taken now (fractional while refilling)."""
        self._refill()
        return self._tokens

    def try_take(self) -> bool:
        """Take one token if there is one; never blocks."""
        self._refill()
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def _refill(self) -> None:
        now = self._clock()
        # A wall clock can step backwards; treat that as no time passing.
        elapsed = max(0.0, now - self._updated)
        self._updated = max(self._updated, now)
        self._tokens = min(self._capacity, self._tokens + elapsed * self._refill_per_second)


class DailyBudget:
    """A daily judge budget (dollars or tokens) that scales the sampling rate down to fit.

    The projection: spend so far over the runs sampled so far gives the cost
    of a scored run (runs still being scored make it a slight underestimate
    for a moment, never an overestimate that would starve the rule), the candidates
    seen since the start of the window give the arrival rate, and the rest of
    the UTC day at that rate must fit in what is left. Forced candidates (the
    rule's ``always`` overrides) are scored at probability 1, so they are
    reserved for first and the sampled ones share the rest. Until some spend
    has been recorded there is nothing to project from and the configured
    rate stands. At midnight UTC everything resets.
    """

    def __init__(self, limit: float, *, clock: Clock = time.time, min_window_seconds: float = 300.0) -> None:
        if limit <= 0:
            raise ValueError(f"budget limit must be positive, got {limit}")
        self.limit = limit
        self.configured_limit = limit
        """The rule's whole daily limit; ``limit`` is this process's part of it (all of it outside a fleet)."""
        self._clock = clock
        # Rates measured over a few seconds are noise; measure over at least this long.
        self._min_window_seconds = min_window_seconds
        self._day = -1
        self._window_start = 0.0
        self.leased: float | None = None
        """In a fleet: what Keeper granted this replica of today's limit, its hard limit (None: one process)."""
        self._start_day()
        self._roll_over(clock())

    def _start_day(self) -> None:
        """Today's counters from zero: at construction and at each UTC midnight.

        What a run cost is kept as a prior until a run of the new day ends: a run's cost does not change at
        midnight, and without it a budget lets one run in flight, so the day's first burst would be refused
        but one run (a run refused is not asked again).
        """
        self._prior_cost = self.cost_per_run if hasattr(self, "_settled_runs") else None
        self.spent = 0.0
        self.scored_runs = 0
        self.in_flight = 0
        """Runs sampled whose judge calls have not all ended: their cost is reserved before it is spent."""
        self._settled_runs = 0
        self._settled_spend = 0.0
        self._sampled_candidates = 0
        self._forced_candidates = 0
        if self.leased is not None:
            self.leased = 0.0  # yesterday's leases end with it

    @property
    def remaining(self) -> float:
        """What is left of today's budget (never negative)."""
        self._roll_over(self._clock())
        return max(0.0, self.limit - self.spent)

    @property
    def exhausted(self) -> bool:
        """No room for one more run: what is spent plus what runs in flight will cost, plus one run's cost.

        A run's cost is learnt from the runs that ended; until one has, a single run is in flight at a time,
        so a burst at the start of the day cannot spend past the limit before the first cost is known.
        """
        remaining = self.remaining if self.leased is None else max(0.0, self.leased - self.spent)
        if remaining <= 0.0:
            return True
        cost = self.cost_per_run
        if cost is None:
            return self.in_flight > 0
        return self.in_flight * cost + cost > remaining + 1e-12

    def use_leases(self) -> None:
        """Fleet mode: spend only what Keeper granted (``grant``); nothing until the first grant."""
        if self.leased is None:
            self.leased = 0.0

    def grant(self, amount: float, day: int) -> None:
        """Add a lease of ``amount`` for UTC day ``day`` (a lease for another day is dropped)."""
        self._roll_over(self._clock())
        if day == self._day and self.leased is not None:
            self.leased += amount

    @property
    def unspent(self) -> float:
        """Of what was leased today, what is not spent yet (fleet mode; 0 outside it)."""
        return 0.0 if self.leased is None else max(0.0, self.leased - self.spent)

    def go_local(self, fleet_spent: float, expected_replicas: int) -> float:
        """Keeper is gone: spend at most an equal part, among ``expected_replicas``, of what the fleet has left.

        What the fleet has left: the limit less ``fleet_spent`` (the day's spend in the shared store). What was
        leased and unspent is given up (Keeper reclaims it when the session expires). Returns the new hard limit.
        """
        self._roll_over(self._clock())
        left = max(0.0, self.configured_limit - max(fleet_spent, self.spent))
        self.leased = self.spent + left / max(1, expected_replicas)
        return self.leased

    def forfeit(self) -> None:
        """Give up what was leased and is unspent (a lost Keeper session: the fleet reclaimed it)."""
        if self.leased is not None:
            self.leased = min(self.leased, self.spent)

    @property
    def day(self) -> int:
        """Today's UTC day number, the key of the day's leases."""
        self._roll_over(self._clock())
        return self._day

    def headroom(self) -> float:
        """Lease not yet spent nor reserved by runs in flight (fleet mode; 0 outside it)."""
        if self.leased is None:
            return 0.0
        return self.leased - self.spent - self.in_flight * (self.cost_per_run or 0.0)

    @property
    def cost_per_run(self) -> float | None:
        """What one scored run cost on average today (yesterday's until a run of today ended; None before any)."""
        if self._settled_runs == 0:
            return self._prior_cost
        return self._settled_spend / self._settled_runs

    def settle(self, spent: float) -> None:
        """A sampled run's judge calls have all ended, costing ``spent`` in all (its pieces went to record_spend)."""
        self._roll_over(self._clock())
        self.in_flight = max(0, self.in_flight - 1)
        self._settled_runs += 1
        self._settled_spend += spent

    def note_candidate(self, *, forced: bool = False) -> None:
        """Count a run that passed the rule's filter; ``forced`` when an override will score it."""
        self._roll_over(self._clock())
        if forced:
            self._forced_candidates += 1
        else:
            self._sampled_candidates += 1

    def note_sampled(self) -> None:
        """Count a run the rule sent to its scorers; spend divided by these is the cost of a run."""
        self._roll_over(self._clock())
        self.scored_runs += 1
        self.in_flight += 1

    def record_spend(self, amount: float) -> None:
        """Add judge cost as it is reported, in any pieces (per scorer, per call, per run)."""
        if amount < 0:
            raise ValueError(f"spend must not be negative, got {amount}")
        self._roll_over(self._clock())
        self.spent += amount

    def restore(self, spent: float, scored_runs: int) -> None:
        """Take up today's spend and scored runs as storage recorded them before a restart.

        Without this a restarted process would start the day's budget from zero and could spend it
        a second time. Candidate rates are still measured from this process's start.
        """
        if spent < 0 or scored_runs < 0:
            raise ValueError(f"restored spend and runs must not be negative, got {spent} and {scored_runs}")
        if self.leased is not None:
            return  # a fleet's leases are sized from the whole fleet's stored spend, not from this counter
        self._roll_over(self._clock())
        self.spent = max(self.spent, spent)
        self.scored_runs = max(self.scored_runs, scored_runs)
        if scored_runs and spent:  # the recorded runs say what a run costs
            self._settled_runs, self._settled_spend = scored_runs, spent

    def learn_cost(self, spent: float, runs: int) -> None:
        """Take what a run cost from the fleet's stored scores while no run of this replica has ended today.

        Until a run's cost is known a budget lets one run in flight; a replica that joins or restarts mid-day
        would otherwise refuse every run of its first burst but one, though the fleet knows the cost.
        """
        self._roll_over(self._clock())
        if self._settled_runs == 0 and runs > 0 and spent > 0:
            self._settled_runs, self._settled_spend = runs, spent

    def set_share(self, fleet_spent: float, members: int) -> None:
        """A fleet's part for this replica: what it spent itself plus an equal part of what the fleet has left.

        ``fleet_spent`` is today's spend of every replica as the shared store has it. The parts of all live
        replicas add up to the configured limit less what replicas that are gone spent, so the fleet never
        plans to spend more than the limit.
        """
        if members < 1:
            raise ValueError(f"members must be at least 1, got {members}")
        self._roll_over(self._clock())
        left = max(0.0, self.configured_limit - max(fleet_spent, self.spent))
        self.limit = self.spent + left / members

    @property
    def day_start(self) -> float:
        """Unix seconds of the current budget day's start (midnight UTC)."""
        self._roll_over(self._clock())
        return float(self._day * SECONDS_PER_DAY)

    def effective_probability(self, configured: float) -> float:
        """The sampling probability to use now: the configured one, or lower so the day fits the budget."""
        now = self._clock()
        self._roll_over(now)
        remaining = self.limit - self.spent
        if remaining <= 0.0:
            return 0.0
        if self.scored_runs == 0 or self.spent == 0.0:
            return configured
        cost_per_run = self.spent / self.scored_runs
        window = max(now - self._window_start, self._min_window_seconds)
        seconds_left = self._day_end - now
        forced_spend = cost_per_run * self._forced_candidates / window * seconds_left
        expected_sampled_candidates = self._sampled_candidates / window * seconds_left
        if expected_sampled_candidates <= 0.0:
            return configured
        affordable = (remaining - forced_spend) / cost_per_run
        return max(0.0, min(configured, affordable / expected_sampled_candidates))

    @property
    def _day_end(self) -> float:
        return float((self._day + 1) * SECONDS_PER_DAY)

    def _roll_over(self, now: float) -> None:
        day = int(now // SECONDS_PER_DAY)
        if day <= self._day:
            return
        # A process started mid-day measures its rates from its own start, later days from midnight.
        self._window_start = now if self._day < 0 else float(day * SECONDS_PER_DAY)
        self._day = day
        self._start_day()
