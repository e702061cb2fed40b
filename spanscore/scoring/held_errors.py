"""How many scores stand in an error now, per rule: counted from ``scores FINAL`` in the background.

``spanscore status`` and ``/metrics`` are answered from an in-memory dict, never by a query per request, so
this loop recounts every ``interval_s`` (and at once after a backfill, which is what clears them). A failed
count keeps the last one: storage being down is reported by the write path, not by a zero here.
"""

from __future__ import annotations

import asyncio
import logging

from spanscore.metric_keys import metric_key
from spanscore.pipeline import Background, every
from spanscore.storage.reads.score_errors import Queries, errors_held

log = logging.getLogger(__name__)


class HeldErrors:
    """``scores_errors_held`` and ``scores_errors_held_by_rule{rule}``: scores whose latest version is an error."""

    def __init__(self, store: Queries, interval_s: float = 10.0) -> None:
        self._store = store
        self._interval_s = interval_s
        self._background = Background("held-errors")
        self._counts: dict[str, int] = {}
        self.counted = False
        """False until the first count succeeded: until then nothing is reported rather than a false 0."""

    async def start(self) -> None:
        self._background.start(self._loop)

    async def shutdown(self) -> None:
        await self._background.stop()

    async def _loop(self) -> None:
        await every(self._interval_s, self._background.stopping, self.refresh, self._failed)

    def _failed(self, exc: Exception) -> None:
        log.warning("scores in error not counted this pass (the last count stays): %s", exc)

    async def refresh(self) -> None:
        """Count again now."""
        held = await asyncio.to_thread(errors_held, self._store)
        counts: dict[str, int] = {}
        for (rule, _), count in held.items():
            counts[rule] = counts.get(rule, 0) + count
        self._counts, self.counted = counts, True

    def metrics(self) -> dict[str, float]:
        if not self.counted:
            return {}
        by_rule: dict[str, float] = {
            metric_key("scores_errors_held_by_rule", rule=rule): count for rule, count in self._counts.items()
        }
        return by_rule | {"scores_errors_held": sum(self._counts.values())}
