"""The assembler's thread: batches in the order handed over, a bounded queue that holds the writer, a clean close."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

from spanscore.records import SpanRecord
from spanscore.runs.assembly_thread import AssemblyThread
from spanscore.runs.intake import sampled_size
from spanscore.runs.readiness import RunAssembler
from spanscore.runs.sizes import span_bytes


async def test_batches_run_in_order_and_a_full_queue_holds_the_next_hand_over() -> None:
    assembly = AssemblyThread(RunAssembler(), max_queued_records=10)
    gate = threading.Event()
    done: list[int] = []

    def batch(number: int) -> None:
        gate.wait(30)
        done.append(number)

    await assembly.hand_over(lambda: batch(0), 6)
    await assembly.hand_over(lambda: batch(1), 4)  # 10 queued: full
    third = asyncio.ensure_future(assembly.hand_over(lambda: batch(2), 1))
    fourth = asyncio.ensure_future(assembly.hand_over(lambda: batch(3), 1))
    await asyncio.sleep(0.2)
    assert not third.done() and not fourth.done(), "a hand-over was taken over the queue's bound"
    assert assembly.queued_records == 10
    gate.set()
    await asyncio.gather(third, fourth)
    assert await assembly.call(lambda: list(done)) == [0, 1, 2, 3]
    assert assembly.queued_records == 0
    await assembly.close()


async def test_a_batch_larger_than_the_bound_is_taken_when_the_queue_is_empty() -> None:
    assembly = AssemblyThread(RunAssembler(), max_queued_records=10)
    seen: list[int] = []
    await asyncio.wait_for(assembly.hand_over(lambda: seen.append(50), 50), 30)
    assert await assembly.call(lambda: list(seen)) == [50]
    await assembly.close()


async def test_a_failed_batch_is_counted_and_the_next_ones_still_run() -> None:
    assembly = AssemblyThread(RunAssembler())

    def failing() -> None:
        raise ValueError("bad batch")

    seen: list[int] = []
    await assembly.hand_over(failing, 1)
    await assembly.hand_over(lambda: seen.append(1), 1)
    assert await assembly.call(lambda: list(seen)) == [1]
    await asyncio.sleep(0)  # the done callbacks reach the loop
    for _ in range(100):
        if assembly.failed_batches:
            break
        await asyncio.sleep(0.01)
    assert assembly.failed_batches == 1
    await assembly.close()


async def test_after_close_calls_run_where_they_are_made_once_the_queue_is_finished() -> None:
    assembly = AssemblyThread(RunAssembler())
    loop_thread = threading.get_ident()
    ran_on: list[int] = []
    await assembly.hand_over(lambda: ran_on.append(threading.get_ident()), 1)
    await assembly.close()
    assert ran_on and ran_on[0] != loop_thread
    assert await assembly.call(threading.get_ident) == loop_thread
    assembly.open()
    assert await assembly.call(threading.get_ident) != loop_thread
    await assembly.close()


async def test_the_queue_is_bounded_in_bytes_too() -> None:
    """200,000 LLM-sized spans fit the record bound and held about 1.5 GB: the bytes bound the queue as well."""
    assembly = AssemblyThread(RunAssembler(), max_queued_records=1000, max_queued_bytes=100)
    gate = threading.Event()
    await assembly.hand_over(lambda: gate.wait(30), 1, 60)
    second = asyncio.ensure_future(assembly.hand_over(lambda: None, 1, 60))  # 120 bytes: over the bound
    await asyncio.sleep(0.2)
    assert not second.done() and (assembly.queued_records, assembly.queued_bytes) == (1, 60)
    gate.set()
    await asyncio.wait_for(second, 30)
    await assembly.call(lambda: None)
    await asyncio.sleep(0.05)
    assert (assembly.queued_records, assembly.queued_bytes) == (0, 0)
    await assembly.close()


def test_a_batch_is_sized_from_a_sample_close_to_its_whole() -> None:
    small = SpanRecord(
        trace_id="ab" * 16, span_id="01" * 8, parent_span_id="", name="GET /", kind="Client", start_time_ns=1,
        end_time_ns=2, service_name="svc", attributes={"http.method": "GET"}, resource_attributes={},
    )  # fmt: skip
    large = replace(small, attributes={"gen_ai.input.messages": "x" * 5000})
    batch = [large if index % 3 == 0 else small for index in range(1000)]
    exact = sum(map(span_bytes, batch))
    assert abs(sampled_size(batch, span_bytes) - exact) < exact * 0.1
    assert sampled_size([], span_bytes) == 0
    assert sampled_size(batch[:5], span_bytes) == sum(map(span_bytes, batch[:5]))
