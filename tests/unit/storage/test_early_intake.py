"""Behind a spooled acknowledgement, a batch is offered to the next stage when acknowledged (#43).

What the early intake takes, it is told about once stored and never gets again; what it declines, or what a new
intake never saw, comes after the insert as before. Over both spools (the log and a file per batch).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from spanscore.pipeline import Calling
from spanscore.storage.write.early import EarlyRelay
from spanscore.storage.write.spool import Spool
from spanscore.storage.write.spool_log import SpoolLog
from spanscore.storage.write.writer import BatchWriter, Inserts, WriterConfig
from tests.fakes.collected import Collected


class GatedStore:
    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.calls: list[list[int]] = []

    async def insert(self, records: Sequence[int]) -> None:
        await self.gate.wait()
        self.calls.append(list(records))


class Intake:
    """Takes the batches ``accept`` says, and records what it is told."""

    def __init__(self, accept: Any = lambda records: True) -> None:
        self.accept = accept
        self.taken: dict[Hashable, list[int]] = {}
        self.inserted_calls: list[list[Hashable]] = []

    def take(self, records: Sequence[int], batch: Hashable, /) -> bool:
        if not self.accept(records):
            return False
        self.taken[batch] = list(records)
        return True

    async def inserted(self, batches: Sequence[Hashable], /) -> Collection[Hashable]:
        self.inserted_calls.append(list(batches))
        return [batch for batch in batches if batch in self.taken]


@pytest.fixture(params=["log", "files"])
def spool_type(request: pytest.FixtureRequest) -> Iterator[type[Any]]:
    yield SpoolLog if request.param == "log" else Spool


def _writer(
    store: GatedStore, spool_dir: Path, spool_type: type[Any], intake: Any, stored: Collected[int], **config: Any
) -> BatchWriter[int]:
    settings: dict[str, Any] = {
        "batch_max": 100, "flush_interval": 0.0, "max_pending": 1000, "acknowledge": "spooled",
        "replay_backoff_s": 0.01, "insert_interval": 0.0,
    }  # fmt: skip
    settings.update(config)
    return BatchWriter(
        "t", Inserts(Calling(store.insert)), WriterConfig(**settings),
        spool=spool_type(spool_dir, 1 << 20), stored=stored, early=intake,
    )  # fmt: skip


async def _until(condition: Any, wait_s: float = 10.0) -> None:
    for _ in range(int(wait_s * 100)):
        if condition():
            return
        await asyncio.sleep(0.01)


async def test_a_batch_is_taken_when_acknowledged_and_told_once_stored(tmp_path: Path, spool_type: type[Any]) -> None:
    store, intake, stored = GatedStore(), Intake(), Collected[int]()
    writer = _writer(store, tmp_path, spool_type, intake, stored)
    await writer.start()
    await asyncio.wait_for(writer.consume([1, 2, 3]), 5)
    assert list(intake.taken.values()) == [[1, 2, 3]]  # with the acknowledgement, nothing inserted yet
    assert store.calls == [] and intake.inserted_calls == []
    store.gate.set()
    await _until(lambda: intake.inserted_calls)
    await writer.shutdown()
    assert store.calls == [[1, 2, 3]]
    assert intake.inserted_calls == [list(intake.taken)]  # told by the same handle it took the batch under
    assert stored == []  # taken already: not handed on a second time
    assert writer.inserter.early_batches == 1


async def test_a_declined_batch_comes_after_its_insert(tmp_path: Path, spool_type: type[Any]) -> None:
    store, intake, stored = GatedStore(), Intake(accept=lambda records: records[0] != 2), Collected[int]()
    writer = _writer(store, tmp_path, spool_type, intake, stored, insert_interval=0.2)
    await writer.start()
    for value in (1, 2, 3):
        await asyncio.wait_for(writer.consume([value]), 5)
    store.gate.set()
    await _until(lambda: sum(map(len, store.calls)) == 3)
    await writer.shutdown()
    assert sorted(value for call in store.calls for value in call) == [1, 2, 3]
    assert sorted(value for batch in intake.taken.values() for value in batch) == [1, 3]
    assert stored == [2]  # only what the intake did not take, even where one insert held all three


async def test_batches_a_new_intake_never_saw_come_after_their_insert(tmp_path: Path, spool_type: type[Any]) -> None:
    store, stored = GatedStore(), Collected[int]()
    relay: EarlyRelay[int] = EarlyRelay()
    first = Intake()
    relay.connect(first)
    writer = _writer(store, tmp_path, spool_type, relay, stored)
    await writer.start()
    await asyncio.wait_for(writer.consume([1]), 5)
    relay.connect(Intake())  # live scoring restarted between the acknowledgement and the insert
    await asyncio.wait_for(writer.consume([2]), 5)
    relay.connect(None)
    await asyncio.wait_for(writer.consume([3]), 5)  # nothing connected: declined
    store.gate.set()
    await _until(lambda: sum(map(len, store.calls)) == 3)
    await writer.shutdown()
    assert list(first.taken.values()) == [[1]]
    assert sorted(stored) == [1, 2, 3]  # the new intake (or none) says it took nothing: every record comes


async def test_nothing_is_offered_early_under_a_stored_acknowledgement(tmp_path: Path, spool_type: type[Any]) -> None:
    store, intake, stored = GatedStore(), Intake(), Collected[int]()
    store.gate.set()
    writer = _writer(store, tmp_path, spool_type, intake, stored, acknowledge="stored")
    await writer.start()
    await asyncio.wait_for(writer.consume([1, 2]), 5)
    await writer.shutdown()
    assert intake.taken == {} and intake.inserted_calls == []
    assert stored == [1, 2]
