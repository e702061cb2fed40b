"""The stages' one seam: relays for late stages, fan-out, durable and background consumers, the writer's hand-on."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from spanscore.errors import RetryableError
from spanscore.pipeline import Calling, Consumer, FanOut, Relay
from spanscore.scoring.outputs import InBackground, UntilDurable
from spanscore.storage.write.writer import BatchWriter, Inserts, WriterConfig
from tests.fakes.collected import Collected


class _Refusing:
    """Refuses ``failures`` times as storage does when it is down without a spool, then keeps the rows."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.rows: list[int] = []

    async def insert(self, rows: Sequence[int]) -> None:
        if self.failures:
            self.failures -= 1
            raise RetryableError("storage down")
        self.rows.extend(rows)


class _Broken:
    async def consume(self, batch: Sequence[int], /) -> None:
        raise RuntimeError("the next stage broke")


async def test_a_relay_hands_on_only_while_connected() -> None:
    relay: Relay[Sequence[int]] = Relay()
    first: Collected[int] = Collected()
    await relay.consume([1])  # nothing connected: goes nowhere, and is not an error
    relay.connect(first)
    await relay.consume([2, 3])
    second: Collected[int] = Collected()
    relay.connect(second)
    await relay.consume([4])
    assert (first, second, relay.connected) == ([2, 3], [4], True)


async def test_fan_out_hands_every_batch_to_each_consumer_in_order_and_stops_at_an_error() -> None:
    a: Collected[int] = Collected()
    b: Collected[int] = Collected()
    await FanOut([a, b]).consume([1, 2])
    assert a == b == [1, 2]
    after: Collected[int] = Collected()
    broken: Consumer[Sequence[int]] = _Broken()
    with pytest.raises(RuntimeError, match="next stage broke"):
        await FanOut([a, broken, after]).consume([3])
    assert (a, after) == ([1, 2, 3], [])


async def test_until_durable_waits_through_refusals_and_keeps_every_row_once() -> None:
    store = _Refusing(failures=3)
    writer: BatchWriter[int] = BatchWriter(
        "t", Inserts(Calling(store.insert)), WriterConfig(batch_max=10, flush_interval=0.0, max_pending=100)
    )
    await writer.start()
    durable = UntilDurable(writer, first_delay_s=0.001, max_delay_s=0.002)
    await asyncio.wait_for(durable.consume([1, 2]), 5)
    await writer.shutdown()
    assert (store.rows, durable.retries) == ([1, 2], 3)


async def test_in_background_returns_at_once_bounds_what_is_out_and_settles() -> None:
    gate = asyncio.Event()
    done: list[int] = []

    class _Slow:
        async def consume(self, batch: Sequence[int], /) -> None:
            await gate.wait()
            done.extend(batch)

    background = InBackground(_Slow(), max_in_flight=2)
    await background.consume([1])
    await background.consume([2])
    third = asyncio.create_task(background.consume([3]))
    await asyncio.sleep(0.05)
    assert not third.done() and done == []  # two out: the third waits for a slot, not memory
    gate.set()
    await asyncio.wait_for(third, 5)
    await asyncio.wait_for(background.settle(), 5)
    assert sorted(done) == [1, 2, 3]


async def test_a_failing_next_stage_does_not_fail_the_write() -> None:
    """Stored is stored: what the assembler missed it reads back from storage, the exporter still gets its OK."""
    store = _Refusing(failures=0)
    writer: BatchWriter[int] = BatchWriter(
        "t",
        Inserts(Calling(store.insert)),
        WriterConfig(batch_max=10, flush_interval=0.0, max_pending=100),
        stored=_Broken(),
    )
    await writer.start()
    await asyncio.wait_for(writer.consume([7]), 5)
    await writer.shutdown()
    assert store.rows == [7] and writer.stats.stored == 1
