"""A fleet round's steps, each on its own: one that raises does not keep the others from running.

A replica's fleet round follows the members, takes up stored turns, sizes its shares, tops up its budget
leases and takes up a lost replica's runs. When these ran as one block, a single failing step (a spend read
that tripped on a NULL cost) stopped every later one on every replica, round after round: no survivor took
a lost replica's sessions up. Each step now fails alone: counted per step, logged once per cause (a cause
repeating every half second would bury the log), and tried again next round.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Awaitable, Callable

from spanscore.metric_keys import metric_key

log = logging.getLogger(__name__)

_NUMBERS = re.compile(r"\d+")


class FleetSteps:
    def __init__(self) -> None:
        self.failures: Counter[str] = Counter()
        self._causes: dict[str, str] = {}
        """The cause each failing step last logged: a step that keeps failing the same way logs once."""

    async def run(self, step: str, work: Callable[[], Awaitable[object]]) -> bool:
        """Run one step; False (counted, logged once per cause) when it raised."""
        try:
            await work()
        except Exception as exc:
            self.failures[step] += 1
            cause = _cause(exc)
            if _NUMBERS.sub("#", cause) != _NUMBERS.sub("#", self._causes.get(step, "")):
                log.warning("fleet: %s failed (the other steps go on; retried each round): %s", step, cause)
            self._causes[step] = cause
            return False
        if self._causes.pop(step, None) is not None:
            log.info("fleet: %s works again", step)
        return True

    def failing(self, step: str) -> bool:
        """Whether ``step`` failed the last time it ran."""
        return step in self._causes

    @property
    def total_failures(self) -> int:
        return sum(self.failures.values())

    def metrics(self) -> dict[str, float]:
        return {metric_key("fleet_step_failures", step=step): float(count) for step, count in self.failures.items()}


def _cause(exc: Exception) -> str:
    """The exception in plain words: its kind and the first line of its message, shortened."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else "no message"
    return f"{type(exc).__name__}: {text[:300]}"
