"""Until a budget knows what a run costs, a burst is decided one judged run at a time, not refused.

A daily budget lets one run in flight until a run has cost something (``sampling.budget``): with no cost
it cannot reserve for a second. A run it refuses is ``over_budget`` for good, so a burst that arrives at
start-up (or in a fleet replica's first minutes) lost every run but one, more of them the slower the judge
(an independent check saw 19-21 of 28 refused at load 14). Here the dispatcher's batch is cut after the first
run a budget that has not learnt its cost would likely sample; the rest waits for that run to end, then is
decided with the cost known. The wait is bounded in all (``wait_s`` until every cost is known), so a judge
that hangs delays decisions by that much once, and then the budget refuses as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence

from spanscore.sampling.engine import RuleEngine
from spanscore.scoring.claim_check import Pair

FIRST_COST_WAIT_S = 10.0


class FirstCost:
    def __init__(self, engine: Callable[[], RuleEngine], wait_s: float = FIRST_COST_WAIT_S) -> None:
        self._engine = engine
        self._wait_s = wait_s
        self._left_s = wait_s
        """What is left of the wait while costs are unknown (reset once every budget knows its cost)."""
        self._ended = asyncio.Event()
        self.waits = 0
        """Batches held back for a first run's cost."""

    async def parts(self, subjects: Sequence[Pair]) -> AsyncIterator[list[Pair]]:
        """The subjects in the parts to decide in turn: one part (all of them) once every cost is known."""
        rest = list(subjects)
        while True:
            engine = self._engine()
            unknown = _unknown(engine)
            if not unknown:
                self._left_s = self._wait_s
            index = _first_judged(engine, rest, unknown) if unknown and self._left_s > 0 else None
            if index is None:
                yield rest
                return
            if _in_flight_unknown(engine, unknown):  # a run of this budget is being judged: its cost comes first
                self.waits += 1
                await self._until_settled(unknown)
                continue
            yield rest[: index + 1]
            rest = rest[index + 1 :]
            if not rest:
                return

    def ended(self) -> None:
        """A sampled run's scorers all ended (the dispatcher calls this after settling its budget)."""
        self._ended.set()

    async def _until_settled(self, rules: set[str]) -> None:
        """While a budget of ``rules`` has a run in flight and no cost yet, within what is left of the wait."""
        began = time.monotonic()
        while (left := self._left_s - (time.monotonic() - began)) > 0 and _in_flight_unknown(self._engine(), rules):
            self._ended.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ended.wait(), left)
        self._left_s -= time.monotonic() - began


def _unknown(engine: RuleEngine) -> set[str]:
    return {rule for rule in engine.budget_rules() if (b := engine.budget(rule)) is not None and b.cost_per_run is None}


def _in_flight_unknown(engine: RuleEngine, rules: set[str]) -> bool:
    budgets = [engine.budget(rule) for rule in rules]
    return any(b is not None and b.cost_per_run is None and b.in_flight > 0 for b in budgets)


def _first_judged(engine: RuleEngine, subjects: list[Pair], unknown: set[str]) -> int | None:
    """The index of the first subject a rule of ``unknown`` would likely sample (None: none would)."""
    for index, (subject, _) in enumerate(subjects):
        if unknown & set(engine.budget_demand([subject.run])):
            return index
    return None
