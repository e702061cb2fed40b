"""A restart lists undecided runs only once the decisions and scores an earlier process spooled are stored.

Observed (#43, an independent check): after a kill -9 under load in spooled mode, 271 runs had their decision row
twice: recovery read storage while the spool's replay was still inserting the decisions written just before the
kill, took those runs for undecided, and decided them again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest

from spanscore.sampling.rules import RuleConfig
from spanscore.scoring import live as live_module
from spanscore.scoring.config import ScoringConfig
from spanscore.scoring.live import LiveScoring

RULE = RuleConfig.model_validate({"name": "everything", "scorers": ["completeness"]})


class _Spool:
    def __init__(self, batches: int) -> None:
        self.batches = batches


class _Writer:
    """A durable writer whose spool still holds what an earlier process wrote."""

    def __init__(self, name: str, batches: int) -> None:
        self.name = name
        self.spool = _Spool(batches)

    async def start(self) -> None:
        return None

    async def consume(self, rows: Sequence[Any], /) -> None:
        return None

    async def shutdown(self) -> None:
        return None


async def test_recovery_waits_for_the_spooled_decisions(monkeypatch: pytest.MonkeyPatch) -> None:
    decisions = _Writer("decisions", batches=2)
    writers = (_Writer("scores", 0), decisions, _Writer("scored_runs", 0))
    live = LiveScoring(object(), [RULE], scoring=ScoringConfig(), writers=writers)  # type: ignore[arg-type]
    drained_at: list[float] = []
    listed_at: list[float] = []

    async def replay() -> None:
        await asyncio.sleep(0.3)
        decisions.spool.batches = 0
        drained_at.append(time.monotonic())

    async def listing(source: object, since_ns: int) -> list[str]:
        listed_at.append(time.monotonic())
        return []

    class _Source:
        def __init__(self, store: object) -> None:
            pass

        def latest_span_ns(self, now_ns: int) -> int:
            return now_ns

        def recent_traces(self, since_ns: int) -> list[Any]:
            return []

    monkeypatch.setattr(live_module, "StoredSpanSource", _Source)
    monkeypatch.setattr(live, "_undecided", listing)
    monkeypatch.setattr(live, "_restore_budgets", lambda: None)
    replaying = asyncio.ensure_future(replay())
    await live.start()
    try:
        await replaying
        assert listed_at and drained_at and listed_at[0] >= drained_at[0], "recovery read storage before the replay"
    finally:
        await live.shutdown()
