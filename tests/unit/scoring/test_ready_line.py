"""Readiness goes on while a dispatch waits for scoring (#43), bounded, in order, and nothing polled is lost at a stop.

Observed: a poll waited for its whole dispatch, and a dispatch waits while the scoring queue is full. Under the
default rule at 12,000 spans/s one poll took 7,000-10,000 runs; the scorers sat idle while the next check built
them, and a run ready just after a check waited for the whole batch: run end to score 12-18 s at the median.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace

from spanscore.records import SpanRecord
from spanscore.runs.assembly_thread import AssemblyThread
from spanscore.runs.config import RunsConfig
from spanscore.runs.readiness import ReadyRun, RunAssembler
from spanscore.runs.sessions import ReadySession, SessionTracker
from spanscore.scoring.ready_poller import ReadyPoller

INTERVAL_S = 0.02
WAIT_S = 20.0


def _root(number: int) -> SpanRecord:
    now = time.time_ns()
    return SpanRecord(
        trace_id=f"{number:032x}",
        span_id=f"{number:016x}",
        parent_span_id="",
        name="invoke_agent helper",
        kind="SPAN_KIND_INTERNAL",
        start_time_ns=now - 1_000_000,
        end_time_ns=now,
        service_name="ready-line",
        attributes={"gen_ai.operation.name": "invoke_agent"},
    )


class _Held:
    """A dispatcher that holds each hand-on until released: scoring that is behind."""

    def __init__(self) -> None:
        self.handed: list[list[str]] = []
        self.runs: list[ReadyRun] = []
        self.finished = 0
        """Runs whose dispatch returned."""
        self.release = asyncio.Event()
        self.fail_first = False

    async def consume(self, items: Sequence[ReadyRun], /) -> None:
        self.handed.append([ready.run.trace_id for ready in items])
        self.runs.extend(items)
        await self.release.wait()
        self.finished += len(items)
        if self.fail_first:
            self.fail_first = False
            raise RuntimeError("a dispatch that failed")


class _Sessions:
    async def consume(self, items: Sequence[ReadySession], /) -> None:
        return None


def _poller(held: _Held, max_waiting: int = 100, chunk: int = 100) -> tuple[ReadyPoller, AssemblyThread]:
    assembly = AssemblyThread(RunAssembler(RunsConfig(quiet_period_s=0.0, max_wait_s=0.01)))
    poller = ReadyPoller(
        assembly, SessionTracker(), held, _Sessions(), interval_s=INTERVAL_S, scores_sessions=lambda: False,
        max_waiting=max_waiting, chunk=chunk,
    )  # fmt: skip
    return poller, assembly


async def _until(check: object, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


def _child(number: int, text: str) -> SpanRecord:
    """A step of run ``number`` carrying ``text`` (a model call's messages)."""
    root = _root(number)
    return replace(root, span_id=f"{number + 1:015x}f", parent_span_id=root.span_id, attributes={"step.text": text})


async def _add(assembly: AssemblyThread, *numbers: int, text: str = "") -> None:
    spans = [_root(number) for number in numbers] + [_child(number, text) for number in numbers if text]
    await assembly.hand_over(lambda: assembly.assembler.add_spans(spans, time.time_ns()), len(spans))


async def test_runs_ready_while_a_dispatch_waits_are_still_polled() -> None:
    held = _Held()
    poller, assembly = _poller(held)
    poller.start()
    try:
        await _add(assembly, 1)
        await _until(lambda: held.handed, "the first run was never handed on")
        await _add(assembly, 2, 3)
        # The first dispatch still waits; the next runs are taken from the assembler meanwhile (they wait in line).
        await _until(lambda: assembly.assembler.stats.runs_ready == 3, "runs ready during a dispatch were not polled")
        assert poller.waiting == 2
        held.release.set()
        await _until(lambda: len(held.handed) == 2, "the waiting runs were not handed on")
        assert held.handed == [[f"{1:032x}"], [f"{2:032x}", f"{3:032x}"]]
    finally:
        held.release.set()
        await poller.stop()
        await assembly.close()


async def test_the_line_is_bounded_and_the_rest_waits_in_the_assembler() -> None:
    held = _Held()
    poller, assembly = _poller(held, max_waiting=2)
    poller.start()
    try:
        await _add(assembly, 1)
        await _until(lambda: held.handed, "the first run was never handed on")
        await _add(assembly, 2, 3)
        await _until(lambda: poller.waiting == 2, "the line did not take the ready runs")
        await _add(assembly, 4)
        await asyncio.sleep(20 * INTERVAL_S)
        assert poller.waiting == 2, "the line took runs past its bound"
        assert assembly.assembler.stats.runs_ready == 3, "the assembler was polled with the line full"
        held.release.set()
        await _until(lambda: sum(map(len, held.handed)) == 4, "the run held back was never handed on")
    finally:
        held.release.set()
        await poller.stop()
        await assembly.close()


async def test_chunks_keep_the_order_and_a_failed_one_does_not_stop_the_line() -> None:
    held = _Held()
    held.fail_first = True
    poller, assembly = _poller(held, chunk=2)
    poller.start()
    try:
        await _add(assembly, 1)
        await _until(lambda: held.handed, "the first run was never handed on")
        await _add(assembly, 2, 3, 4, 5, 6)
        await _until(lambda: poller.waiting == 5, "the line did not take the ready runs")
        held.release.set()
        await _until(lambda: sum(map(len, held.handed)) == 6, "the line stopped after a failed dispatch")
        # In the order run assembly made them ready (one stored batch: the order its traces arrived in).
        assert held.handed == [[f"{1:032x}"], [f"{2:032x}", f"{3:032x}"], [f"{4:032x}", f"{5:032x}"], [f"{6:032x}"]]
    finally:
        held.release.set()
        await poller.stop()
        await assembly.close()


async def test_a_stop_hands_on_every_run_already_polled() -> None:
    held = _Held()
    poller, assembly = _poller(held)
    poller.start()
    await _add(assembly, 1)
    await _until(lambda: held.handed, "the first run was never handed on")
    await _add(assembly, 2, 3)
    await _until(lambda: poller.waiting == 2, "the line did not take the ready runs")
    stopping = asyncio.ensure_future(poller.stop())
    await asyncio.sleep(0.1)
    assert not stopping.done(), "the stop returned with runs polled and not handed on"
    held.release.set()
    await asyncio.wait_for(stopping, WAIT_S)
    assert sum(map(len, held.handed)) == 3 and poller.waiting == 0
    await assembly.close()


async def test_sessions_are_polled_only_after_the_runs_polled_before_them() -> None:
    """A run becomes a turn of its session when it is dispatched: a session polled before would miss it."""
    held = _Held()
    order: list[str] = []

    class Tracker(SessionTracker):
        def poll_ready(self, now_ns: int) -> list[ReadySession]:
            order.append(f"sessions after {held.finished} runs were dispatched")
            return []

    assembly = AssemblyThread(RunAssembler(RunsConfig(quiet_period_s=0.0, max_wait_s=0.01)))
    poller = ReadyPoller(
        assembly, Tracker(), held, _Sessions(), interval_s=INTERVAL_S, scores_sessions=lambda: True,
    )  # fmt: skip
    poller.start()
    try:
        await _add(assembly, 1)
        await _until(lambda: held.handed, "the first run was never handed on")
        order.clear()
        await asyncio.sleep(10 * INTERVAL_S)  # polls go on during the dispatch
        assert order == [], "sessions were polled while a run polled before them was not handed on"
        held.release.set()
        await _until(lambda: order, "sessions were never polled")
        assert order[0] == "sessions after 1 runs were dispatched"
    finally:
        held.release.set()
        await poller.stop()
        await assembly.close()


async def test_a_run_waiting_in_line_is_built_in_full_when_the_rules_change_to_select_it() -> None:
    held = _Held()
    poller, assembly = _poller(held)
    assembly.assembler.selects = lambda run: False  # no rule selects these runs: each is built as a filter view
    poller.start()
    try:
        await _add(assembly, 1)
        await _until(lambda: held.handed, "the first run was never handed on")
        await _add(assembly, 2)
        await _until(lambda: poller.waiting == 1, "the line did not take the ready run")
        assembly.assembler.selects = lambda run: True  # new rules select every run
        held.release.set()
        await _until(lambda: len(held.runs) == 2, "the waiting run was not handed on")
        assert held.runs[0].complete is not None, "the first run was not a filter view: the test shows nothing"
        assert held.runs[1].complete is None, "a run the rules now select was decided on its filter view"
    finally:
        held.release.set()
        await poller.stop()
        await assembly.close()


async def test_the_line_is_bounded_in_bytes_too() -> None:
    """LLM-sized runs: the run bound alone would let a line of 2,000 conversations hold several hundred MB."""
    held = _Held()
    assembly = AssemblyThread(RunAssembler(RunsConfig(quiet_period_s=0.0, max_wait_s=0.01)))
    poller = ReadyPoller(
        assembly, SessionTracker(), held, _Sessions(), interval_s=INTERVAL_S, scores_sessions=lambda: False,
        max_waiting=100, max_waiting_bytes=1,
    )  # fmt: skip
    poller.start()
    try:
        await _add(assembly, 1)
        await _until(lambda: held.handed, "the first run was never handed on")
        assembly.assembler.selects = lambda run: False  # from here on filter views, which hold their traces' spans
        await _add(assembly, 2, text="x" * 100_000)
        await _until(lambda: poller.waiting == 1, "the line did not take the ready run")
        assert poller.waiting_bytes >= 100_000, "the spans a filter view holds were not counted"
        await _add(assembly, 3)
        await asyncio.sleep(20 * INTERVAL_S)
        assert poller.waiting == 1, "the line took a run past its byte bound"
        held.release.set()
        await _until(lambda: sum(map(len, held.handed)) == 3, "the run held back was never handed on")
        assert held.runs[1].complete is not None, "the run in line was not a filter view: the test shows nothing"
        await _until(lambda: poller.waiting_bytes == 0, "the line's bytes were not given back")
    finally:
        held.release.set()
        await poller.stop()
        await assembly.close()


async def test_a_stop_out_of_time_names_every_run_it_did_not_hand_on() -> None:
    """Slow judges keep the scoring queue full for minutes: a stop may not wait past the service's shutdown time."""
    held = _Held()
    poller, assembly = _poller(held, chunk=1)
    poller.start()
    await _add(assembly, 1)
    await _until(lambda: held.handed, "the first run was never handed on")
    await _add(assembly, 2, 3)
    await _until(lambda: poller.waiting == 2, "the line did not take the ready runs")
    started = time.monotonic()
    await asyncio.wait_for(poller.stop(within_s=0.3), WAIT_S)
    assert time.monotonic() - started < WAIT_S / 2
    # The chunk cut mid-dispatch and the two still in line: the next start's recovery, or a fleet's note, has them.
    assert sorted(poller.left) == [f"{n:032x}" for n in (1, 2, 3)]
    assert poller.waiting == 0 and poller.waiting_bytes == 0
    held.release.set()
    poller.start()  # live scoring started again: a new line, nothing left over
    try:
        assert poller.left == []
        await _add(assembly, 4)
        await _until(lambda: f"{4:032x}" in held.handed[-1], "a restarted poller did not hand on")
    finally:
        await poller.stop()
        await assembly.close()


async def test_a_run_that_cannot_be_built_for_new_rules_is_decided_as_it_is_and_the_line_goes_on() -> None:
    held = _Held()
    poller, assembly = _poller(held)
    assembly.assembler.selects = lambda run: False
    poller.start()
    try:
        await _add(assembly, 1)
        await _until(lambda: held.handed, "the first run was never handed on")
        await _add(assembly, 2, 3)
        await _until(lambda: poller.waiting == 2, "the line did not take the ready runs")

        def broken(run: object) -> bool:
            raise ValueError("a selector that fails")

        assembly.assembler.selects = broken  # new rules whose selection of these runs fails
        held.release.set()
        await _until(lambda: len(held.runs) == 3, "a run that could not be built for the new rules stopped the line")
        assert all(ready.complete is not None for ready in held.runs[1:])  # decided as the views they were
        assembly.assembler.selects = lambda run: False
        await _add(assembly, 4)
        await _until(lambda: len(held.runs) == 4, "the line did not go on")
    finally:
        held.release.set()
        await asyncio.wait_for(poller.stop(), WAIT_S)
        await assembly.close()
