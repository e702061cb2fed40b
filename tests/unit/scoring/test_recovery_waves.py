"""Undecided traces read back in waves: a trace that cannot be read does not stall the others, and a stop does
not wait for a read in flight (a hostile review of the first version: one failing chunk was retried every 5 s
forever, and a stop waited on a read from a store that had gone away)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable, Mapping

import pytest

from spanscore.records import SpanRecord
from spanscore.runs.assembly_thread import AssemblyThread
from spanscore.runs.readiness import RunAssembler
from spanscore.runs.recovered import RecoveredTrace
from spanscore.scoring import recovery_waves
from spanscore.scoring.recovery_waves import RecoveryWaves


def _trace(trace_id: str) -> RecoveredTrace:
    span = SpanRecord(
        trace_id=trace_id, span_id="a" * 16, parent_span_id="", name="step", kind="Internal",
        start_time_ns=time.time_ns(), end_time_ns=time.time_ns() + 1, service_name="svc", attributes={},
        resource_attributes={},
    )  # fmt: skip
    return RecoveredTrace(trace_id, [span])


class Storage:
    """Stored traces by id; reading one of ``broken`` raises, and ``hold`` blocks every read while it is clear."""

    def __init__(self, ids: list[str], broken: frozenset[str] = frozenset()) -> None:
        self.ids, self.broken = ids, broken
        self.hold = threading.Event()
        self.hold.set()

    def traces(self, trace_ids: list[str]) -> list[RecoveredTrace]:
        self.hold.wait(30)
        if self.broken & set(trace_ids):
            raise ValueError("a row the reader cannot turn into a span")
        return [_trace(trace_id) for trace_id in trace_ids]

    def handled_runs(self, trace_ids: Iterable[str]) -> Mapping[str, Mapping[str, bool]]:
        return {}

    def recent_traces(self, since_ns: int) -> Iterable[RecoveredTrace]:
        return []

    def latest_span_ns(self, now_ns: int) -> int:
        return now_ns

    def undecided_trace_ids(self, since_ns: int, before_ns: int | None = None) -> list[str]:
        return self.ids


async def test_a_trace_that_cannot_be_read_back_is_skipped_and_the_ones_behind_it_are_adopted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(recovery_waves, "RETRY_S", 0.01)
    ids = [f"{index:032x}" for index in range(30)]
    assembly = AssemblyThread(RunAssembler())
    assembly.open()
    waves = RecoveryWaves(assembly, interval_s=0.01)
    try:
        assert await waves.add(Storage(ids, broken=frozenset({ids[3]})), ids) == 30
        for _ in range(1_000):  # at most 20 s
            if not waves.waiting:
                break
            await asyncio.sleep(0.02)
        assert waves.waiting == 0 and waves.skipped == 1 and waves.adopted == 29
        held = await assembly.call(assembly.assembler.pending_trace_ids)
        assert sorted(held) == sorted(set(ids) - {ids[3]})
    finally:
        await waves.stop()
        await assembly.close()


async def test_a_stop_does_not_wait_for_a_read_in_flight() -> None:
    ids = [f"{index:032x}" for index in range(5)]
    storage = Storage(ids)
    storage.hold.clear()  # the store went away: the read hangs
    assembly = AssemblyThread(RunAssembler())
    assembly.open()
    waves = RecoveryWaves(assembly, interval_s=0.01)
    try:
        await waves.add(storage, ids)
        await asyncio.sleep(0.2)  # the first wave's read has begun
        started = time.monotonic()
        await asyncio.wait_for(waves.stop(), 5)
        assert time.monotonic() - started < 5 and waves.adopted == 0 and waves.waiting == 5
    finally:
        storage.hold.set()
        await assembly.close()
