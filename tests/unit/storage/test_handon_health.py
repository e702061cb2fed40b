"""A writer held back by the stage after it (a full run assembler) says so in ``problems()``, which /healthz shows.

When run assembly falls behind, its queue fills and each insert's hand-on waits for room: scores come late, and
behind a spooled acknowledgement the spool fills while acknowledged spans are not yet queryable. Nothing else
said so (the queue's gauge aside).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from spanscore.pipeline import Calling
from spanscore.storage.write import inserter
from spanscore.storage.write.inserter import RecentWaits
from spanscore.storage.write.spool_log import SpoolLog
from spanscore.storage.write.writer import BatchWriter, Inserts, WriterConfig


class SlowStage:
    """The next stage, taking ``seconds`` per batch as a full assembler queue does."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.taken: list[int] = []

    async def consume(self, records: Sequence[int], /) -> None:
        await asyncio.sleep(self.seconds)
        self.taken.extend(records)


async def _store(records: Sequence[int]) -> None:
    return None


@pytest.mark.parametrize("acknowledge", ["stored", "spooled"])
async def test_a_writer_whose_hand_on_waits_most_of_the_window_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, acknowledge: str
) -> None:
    monkeypatch.setattr(inserter, "HANDON_WINDOW_S", 1.0)
    stage = SlowStage(0.7)
    config = WriterConfig(
        batch_max=10, flush_interval=0.0, max_pending=100, acknowledge=acknowledge, replay_backoff_s=0.01
    )
    spool = SpoolLog[int](tmp_path, 1 << 20) if acknowledge == "spooled" else None
    writer = BatchWriter("spans", Inserts(Calling(_store)), config, stored=stage, spool=spool)
    await writer.start()
    assert writer.problems() == []
    await writer.consume([1, 2])
    for _ in range(300):
        if stage.taken:
            break
        await asyncio.sleep(0.01)
    (problem,) = writer.problems()
    assert "spans writer: inserts waited" in problem and "run assembly" in problem
    assert ("what the spool acknowledged waits to be stored" in problem) == (acknowledge == "spooled")
    assert writer.stats.handon_wait_seconds >= 0.7
    await asyncio.sleep(1.1)  # the window passes without a wait
    assert writer.problems() == []
    await writer.shutdown()


async def test_short_hand_ons_are_not_reported(tmp_path: Path) -> None:
    stage = SlowStage(0.0)
    config = WriterConfig(batch_max=10, flush_interval=0.0, max_pending=100)
    writer = BatchWriter("spans", Inserts(Calling(_store)), config, stored=stage)
    await writer.start()
    for value in range(20):
        await writer.consume([value])
    await writer.shutdown()
    assert stage.taken == list(range(20)) and writer.problems() == []


def test_recent_waits_count_only_waits_that_ended_in_the_window() -> None:
    waits = RecentWaits()
    waits.add(0.0, 20.0)  # ended at 20
    waits.add(30.0, 10.0)  # ended at 40
    assert waits.share(now=40.0) == pytest.approx(30.0 / inserter.HANDON_WINDOW_S)
    assert waits.share(now=85.0) == pytest.approx(10.0 / inserter.HANDON_WINDOW_S)  # the first ended > 60 s ago
    assert waits.share(now=101.0) == 0.0
    waits.add(101.0, 90.0)
    assert waits.share(now=191.0) == 1.0  # capped: one wait longer than the window
