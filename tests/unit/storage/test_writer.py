from __future__ import annotations

import asyncio

import pytest

from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.storage.write.writer import BatchWriter, Inserts, WriterConfig


class Recorder:
    def __init__(self, delay: float = 0.0) -> None:
        self.batches: list[list[int]] = []
        self.delay = delay
        self.fail_next = 0

    async def insert(self, records: list[int]) -> None:
        await asyncio.sleep(self.delay)
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("disk on fire")
        self.batches.append(list(records))


async def test_flush_on_size_groups_concurrent_exports() -> None:
    recorder = Recorder(delay=0.01)
    writer: BatchWriter[int] = BatchWriter(
        "t", Inserts(Calling(recorder.insert)), WriterConfig(batch_max=10, flush_interval=5.0, max_pending=1000)
    )
    await writer.start()
    await asyncio.wait_for(asyncio.gather(*(writer.consume([i, i + 100]) for i in range(5))), 2)
    assert sorted(x for b in recorder.batches for x in b) == sorted([i for i in range(5)] + [i + 100 for i in range(5)])
    assert len(recorder.batches) == 1  # size reached long before the 5 s timer
    await writer.shutdown()


async def test_flush_on_time() -> None:
    recorder = Recorder()
    writer: BatchWriter[int] = BatchWriter(
        "t", Inserts(Calling(recorder.insert)), WriterConfig(batch_max=1000, flush_interval=0.05, max_pending=1000)
    )
    await writer.start()
    await asyncio.wait_for(writer.consume([1]), 2)
    assert recorder.batches == [[1]]
    await writer.shutdown()


async def test_bounded_pending_refuses_with_retry_hint() -> None:
    recorder = Recorder(delay=0.2)
    writer: BatchWriter[int] = BatchWriter(
        "t", Inserts(Calling(recorder.insert)), WriterConfig(batch_max=5, flush_interval=0.0, max_pending=5)
    )
    await writer.start()
    first = asyncio.create_task(writer.consume([1, 2, 3, 4, 5]))
    await asyncio.sleep(0)
    with pytest.raises(RetryableError) as caught:
        await writer.consume([6])
    assert caught.value.retry_after > 0
    assert writer.stats.refused == 1
    await first
    await writer.shutdown()


async def test_failed_insert_fails_waiters_retryably_and_nothing_is_counted_stored() -> None:
    recorder = Recorder()
    recorder.fail_next = 1
    writer: BatchWriter[int] = BatchWriter(
        "t", Inserts(Calling(recorder.insert)), WriterConfig(batch_max=10, flush_interval=0.0, max_pending=100)
    )
    await writer.start()
    with pytest.raises(RetryableError, match="disk on fire"):
        await writer.consume([1, 2])
    assert writer.stats.stored == 0 and writer.pending == 0
    await writer.consume([1, 2])
    assert recorder.batches == [[1, 2]]
    await writer.shutdown()


async def test_shutdown_drains_everything_accepted_and_is_idempotent() -> None:
    recorder = Recorder(delay=0.01)
    writer: BatchWriter[int] = BatchWriter(
        "t", Inserts(Calling(recorder.insert)), WriterConfig(batch_max=3, flush_interval=10.0, max_pending=100)
    )
    await writer.shutdown()  # safe before start
    await writer.start()
    waiters = [asyncio.create_task(writer.consume([i])) for i in range(10)]
    await asyncio.sleep(0)
    await writer.shutdown()
    await asyncio.gather(*waiters)
    assert sorted(x for b in recorder.batches for x in b) == list(range(10))
    assert all(len(b) <= 3 for b in recorder.batches)
    with pytest.raises(RetryableError, match="shutting down"):
        await writer.consume([99])
    await writer.shutdown()


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("batch_max", 0, "batch_max must be at least 1"),
        ("max_pending", 0, "max_pending must be at least 1"),
        ("flush_interval", -1.0, "flush_interval must not be negative"),
        ("acknowledge", "fsynced", "acknowledge must be 'stored' or 'spooled'"),
    ],
)
def test_a_writer_config_refuses_a_bad_value_naming_it(field: str, value: object, says: str) -> None:
    """A writer takes one config object (#27); a bad number is refused there, before any writer exists."""
    settings: dict[str, object] = {"batch_max": 10, "flush_interval": 0.0, "max_pending": 100, field: value}
    with pytest.raises(ValueError, match=says):
        WriterConfig(**settings)  # type: ignore[arg-type]


async def test_a_group_commit_hands_each_batch_to_the_next_stage_as_a_consumer() -> None:
    """The group commit's sink is a ``Consumer`` (#27): the seam every stage uses, not a callback alias."""
    from spanscore.storage.write.group_commit import GroupCommit
    from tests.fakes.collected import Collected

    stage: Collected[int] = Collected()
    lane: GroupCommit[int] = GroupCommit("t", stage, WriterConfig(batch_max=3, flush_interval=10.0, max_pending=100))
    await lane.start()
    await asyncio.wait_for(asyncio.gather(*(lane.consume([i]) for i in range(3))), 5)
    await lane.shutdown()
    assert sorted(stage) == [0, 1, 2]


async def test_a_writer_inserts_through_a_consumer_so_any_stage_can_stand_in_for_storage() -> None:
    """Storage is the writer's last seam and a ``Consumer`` like every other (#27), not an ``InsertFn`` alias."""
    from tests.fakes.collected import Collected

    storage: Collected[int] = Collected()
    writer: BatchWriter[int] = BatchWriter(
        "t", Inserts(storage), WriterConfig(batch_max=10, flush_interval=0.0, max_pending=100)
    )
    await writer.start()
    await asyncio.wait_for(writer.consume([1, 2, 3]), 5)
    await writer.shutdown()
    assert storage == [1, 2, 3] and writer.stats.stored == 3
