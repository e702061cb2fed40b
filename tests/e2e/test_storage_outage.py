"""Storage unavailable mid-stream: exports are still acknowledged (spooled), and everything lands afterwards."""

from __future__ import annotations

import asyncio
import time

import pytest

from spanscore.config import ServiceConfig
from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter, record_agent_trace


def _insert_path(service: Service) -> str:
    """The span inserter's seam that performs inserts: behind an acknowledging spool the writer sends
    the log's own bytes (``encoded``); otherwise it inserts the records (``rows``)."""
    return "encoded" if service.span_writer.inserter.inserts.encoded is not None else "rows"


def _break_storage(service: Service) -> dict[str, bool]:
    """Make span inserts fail while ``state['down']`` is true, as an unreachable server would."""
    state = {"down": True}
    path = _insert_path(service)
    real_insert = getattr(service.span_writer.inserter.inserts, path)

    async def insert(batch):  # type: ignore[no-untyped-def]
        if state["down"]:
            raise RetryableError("storage unavailable (injected)")
        await real_insert.consume(batch)

    setattr(service.span_writer.inserter.inserts, path, Calling(insert))
    return state


async def _count(service: Service, name: str) -> int:
    rows = await asyncio.to_thread(
        service.store.internal_query, f"SELECT count() FROM otel_traces WHERE ServiceName = '{name}'"
    )
    return int(rows[0][0])


async def _wait_count(service: Service, name: str, expected: int, wait_s: float = 30.0) -> int:
    deadline = time.monotonic() + wait_s
    count = await _count(service, name)
    for _ in range(int(wait_s * 10)):
        if count >= expected or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
        count = await _count(service, name)
    return count


async def _wait_replayed(service: Service, expected: int, wait_s: float = 10.0) -> int:
    """The replay counter moves just after the insert returns, so a reader can see rows first."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if service.metrics()["spans_replayed"] >= expected:
            break
        await asyncio.sleep(0.05)
    return int(service.metrics()["spans_replayed"])


async def test_outage_mid_stream_loses_nothing_acknowledged(service_config: ServiceConfig) -> None:
    service = Service(service_config)
    await service.start()
    try:
        before = record_agent_trace("outage")
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), before) == "SUCCESS"
        storage = _break_storage(service)
        during = [record_agent_trace("outage") for _ in range(5)]
        for spans in during:
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        assert await _count(service, "outage") == 2  # only what came before the outage is in storage
        assert service.metrics()["spans_spooled"] == 10
        storage["down"] = False
        assert await _wait_count(service, "outage", 12) == 12
        assert await _wait_replayed(service, 10) == 10
        ids = await asyncio.to_thread(
            service.store.internal_query, "SELECT SpanId FROM otel_traces WHERE ServiceName = 'outage'"
        )
        sent = {f"{s.get_span_context().span_id:016x}" for spans in [before, *during] for s in spans}
        assert {row[0] for row in ids} == sent
    finally:
        await service.shutdown()


async def test_spooled_spans_are_replayed_after_a_restart(service_config: ServiceConfig) -> None:
    first = Service(service_config)
    await first.start()
    try:
        _break_storage(first)
        spans = record_agent_trace("restart-spool")
        assert await asyncio.to_thread(export, grpc_exporter(first.grpc.port), spans) == "SUCCESS"
    finally:
        await first.shutdown()  # storage never came back while this process lived
    second = Service(service_config)
    await second.start()
    try:
        assert await _wait_count(second, "restart-spool", 2) == 2
        assert await _wait_replayed(second, 2) == 2
    finally:
        await second.shutdown()


async def test_without_a_spool_an_outage_means_retry_later(service_config: ServiceConfig) -> None:
    service_config.storage.spool_max_bytes = 0
    service = Service(service_config)
    await service.start()
    try:
        _break_storage(service)
        exporter = grpc_exporter(service.grpc.port)
        exporter._timeout = 2  # the exporter retries UNAVAILABLE; keep the test short
        result = await asyncio.to_thread(export, exporter, record_agent_trace("nospool"))
        assert result == "FAILURE"  # never acknowledged, so nothing was promised
        assert service.metrics()["spans_spooled"] == 0
    finally:
        await service.shutdown()


@pytest.mark.reliability("no-acknowledged-span-lost")
async def test_acknowledge_spooled_stores_everything_through_the_log(service_config: ServiceConfig) -> None:
    """``storage.acknowledge: spooled``: exports return once logged, through an outage too, and all land once."""
    service_config.storage.acknowledge = "spooled"
    service = Service(service_config)
    await service.start()
    try:
        before = record_agent_trace("logged")
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), before) == "SUCCESS"
        assert await _wait_count(service, "logged", 2) == 2
        storage = _break_storage(service)
        during = [record_agent_trace("logged") for _ in range(3)]
        for spans in during:
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        for _ in range(50):  # until the writer has really tried (and failed) to insert them
            if service.span_writer.stats.failed_inserts:
                break
            await asyncio.sleep(0.1)
        assert service.span_writer.stats.failed_inserts > 0
        assert await _count(service, "logged") == 2
        storage["down"] = False
        assert await _wait_count(service, "logged", 8) == 8
        ids = await asyncio.to_thread(
            service.store.internal_query, "SELECT SpanId FROM otel_traces WHERE ServiceName = 'logged'"
        )
        sent = [f"{s.get_span_context().span_id:016x}" for spans in [before, *during] for s in spans]
        assert sorted(row[0] for row in ids) == sorted(sent)  # each exactly once
    finally:
        await service.shutdown()


@pytest.mark.reliability("no-acknowledged-span-lost")
@pytest.mark.parametrize("acknowledge", ["stored", "spooled"])
async def test_an_insert_that_failed_after_writing_is_not_stored_twice(
    service_config: ServiceConfig, acknowledge: str
) -> None:
    """An insert that fails after writing (as a view down the chain would) is retried as the same block: one copy.

    The wrapped insert reaches otel_traces and then reports failure; storage's deduplication
    windows (migration 0006) drop the retried block."""
    service_config.storage.acknowledge = acknowledge  # type: ignore[assignment]
    service = Service(service_config)
    await service.start()
    try:
        path = _insert_path(service)
        assert (path == "encoded") == (acknowledge == "spooled")
        real_insert = getattr(service.span_writer.inserter.inserts, path)
        failures = {"left": 1}

        async def insert_then_fail(batch):  # type: ignore[no-untyped-def]
            await real_insert.consume(batch)
            if failures["left"]:
                failures["left"] -= 1
                raise RetryableError("failed after the rows were written (injected)")

        setattr(service.span_writer.inserter.inserts, path, Calling(insert_then_fail))
        spans = record_agent_trace("twice")
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        for _ in range(100):
            if not failures["left"] and service.span_writer.stats.stored >= 2:
                break
            await asyncio.sleep(0.1)
        assert failures["left"] == 0 and service.span_writer.stats.stored >= 2  # the retry really ran
        ids = await asyncio.to_thread(
            service.store.internal_query, "SELECT SpanId FROM otel_traces WHERE ServiceName = 'twice'"
        )
        assert sorted(row[0] for row in ids) == sorted(f"{s.get_span_context().span_id:016x}" for s in spans)
    finally:
        await service.shutdown()
