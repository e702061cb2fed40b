"""Data the engine refuses never stops storage: split, stored, dead-lettered with the reason, and shown.

Raw OTLP/JSON posts through the real HTTP receiver into the real embedded engine. A
request of spans one day apart over 120 days is more partitions than ClickHouse takes
in one insert block; a timestamp past 64 bits is a value neither the engine nor the
driver can hold (OTLP ingest refuses it now, so such rows are handed to the writers
directly). Neither may hold up the batches behind it, now or after a restart.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import pytest

from spanscore.config import ServiceConfig
from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.records import LogRecord, SpanRecord
from spanscore.server.service import Service

DAY_NS = 86_400 * 10**9
BASE_NS = 1_700_000_000 * 10**9
PAST_64_BITS = 18_446_744_073_709_551_615  # the largest fixed64: a valid OTLP time the log table's Int64 cannot hold
TABLES = {"traces": "otel_traces", "logs": "otel_logs"}
WRITERS = {"traces": "spans", "logs": "logs"}


def _body(signal: str, service_name: str, times: list[int]) -> bytes:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service_name}}]}
    if signal == "traces":
        spans = [
            {
                "traceId": f"{index + 1:032x}",
                "spanId": f"{index + 1:016x}",
                "name": "step",
                "kind": 1,
                "startTimeUnixNano": str(at),
                "endTimeUnixNano": str(at + 1000 if at < PAST_64_BITS else at),
            }
            for index, at in enumerate(times)
        ]
        return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}).encode()
    records = [{"timeUnixNano": str(at), "body": {"stringValue": f"line {index}"}} for index, at in enumerate(times)]
    return json.dumps({"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": records}]}]}).encode()


async def _post(service: Service, signal: str, body: bytes) -> int:
    assert service.http is not None
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"http://127.0.0.1:{service.http.port}/v1/{signal}", data=body, headers={"Content-Type": "application/json"}
        ) as response,
    ):
        return response.status


async def _get(service: Service, path: str) -> dict[str, Any]:
    assert service.api is not None
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{service.api.port}{path}") as got:
        assert got.status == 200
        result: dict[str, Any] = await got.json()
        return result


async def _rows(service: Service, signal: str, service_name: str, expected: int, wait_s: float = 15.0) -> int:
    sql = f"SELECT count() FROM {TABLES[signal]} WHERE ServiceName = '{service_name}'"
    deadline = time.monotonic() + wait_s
    while True:
        count = int((await asyncio.to_thread(service.store.internal_query, sql))[0][0])
        if count >= expected or time.monotonic() > deadline:
            return count
        await asyncio.sleep(0.1)


@pytest.mark.reliability("bad-data-never-blocks-storage")
@pytest.mark.parametrize(("signal", "acknowledge"), [("traces", "stored"), ("logs", "stored"), ("traces", "spooled")])
async def test_a_request_over_120_days_is_stored_and_the_next_one_follows(
    service_config: ServiceConfig, signal: str, acknowledge: str
) -> None:
    """120 spans (or log records) one day apart in one request: stored, and the batch after it too."""
    service_config.storage.acknowledge = acknowledge  # type: ignore[assignment]
    service = Service(service_config)
    await service.start()
    try:
        await _wide_request_then_the_next(service, signal)
    finally:
        await service.shutdown()


async def _wide_request_then_the_next(service: Service, signal: str) -> None:
    days = [BASE_NS + index * DAY_NS for index in range(120)]
    assert await _post(service, signal, _body(signal, "backfill", days)) == 200
    assert await _rows(service, signal, "backfill", 120) == 120
    assert await _post(service, signal, _body(signal, "after", [BASE_NS, BASE_NS + 1])) == 200
    assert await _rows(service, signal, "after", 2) == 2
    assert (await _get(service, "/healthz"))["status"] == "ok"  # split, not refused: nothing to report
    assert service.metrics()[f"{WRITERS[signal]}_dead_lettered"] == 0


async def _assert_dead_lettered_and_shown(service: Service, writer: str) -> None:
    health = await _get(service, "/healthz")
    assert health["status"] == "degraded"
    assert any(writer in problem and "dead-lettered" in problem for problem in health["problems"])
    status = await _get(service, "/api/v1/status")
    assert status[f"{writer}_dead_lettered"] == 1
    assert status[f"{writer}_dead_letters_waiting"] == 1
    assert status["write_path_degraded"] == 1
    [entry] = (await _get(service, "/api/v1/deadletter"))["entries"]
    assert entry["writer"] == writer and entry["records"] == 1
    assert "could not be encoded" in entry["reason"] or "Code:" in entry["reason"]


@pytest.mark.reliability("bad-data-never-blocks-storage")
async def test_a_log_record_storage_refuses_is_dead_lettered_with_the_reason(service: Service) -> None:
    """A log time past 64 bits is refused by the driver: that record is dead-lettered, the others stored.

    OTLP ingest refuses such a time before storage (tests/e2e/test_ingest_bounds.py), so the record is handed to
    the service's log writer directly, as a record replayed from an older spool could still arrive.
    """
    records = [LogRecord(BASE_NS + index, "", "", "", "", 0, f"line {index}", "mixed") for index in range(4)]
    records.append(LogRecord(PAST_64_BITS, "", "", "", "", 0, "line 5", "mixed"))
    await service.log_writer.consume(records)
    assert await _rows(service, "logs", "mixed", 4) == 4
    assert await _post(service, "logs", _body("logs", "next", [BASE_NS])) == 200
    assert await _rows(service, "logs", "next", 1) == 1
    await _assert_dead_lettered_and_shown(service, "logs")
    assert await _rows(service, "logs", "mixed", 5, wait_s=0.5) == 4  # the refused row is not stored


@pytest.mark.reliability("bad-data-never-blocks-storage")
async def test_a_span_storage_refuses_is_dead_lettered_with_the_reason(service: Service) -> None:
    """OTLP cannot carry a negative time, so the refused span is handed to the service's span writer directly."""
    spans = [
        SpanRecord(f"{1:032x}", f"{i + 1:016x}", "", "step", "Internal", BASE_NS, BASE_NS, "mixed") for i in range(4)
    ]
    spans.append(SpanRecord(f"{1:032x}", f"{9:016x}", "", "step", "Internal", -5, 0, "mixed"))
    await service.span_writer.consume(spans)
    assert await _rows(service, "traces", "mixed", 4) == 4
    assert await _post(service, "traces", _body("traces", "next", [BASE_NS])) == 200
    assert await _rows(service, "traces", "next", 1) == 1
    await _assert_dead_lettered_and_shown(service, "spans")
    [entry] = (await _get(service, "/api/v1/deadletter"))["entries"]
    assert "Code: 72" in entry["reason"]  # the engine's own reason (CANNOT_PARSE_NUMBER)

    assert service.api is not None
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"http://127.0.0.1:{service.api.port}/api/v1/deadletter/replay", json={"writer": "spans"}) as got,
    ):
        assert got.status == 200
        assert [item["id"] for item in (await got.json())["replayed"]] == [entry["id"]]
    [again] = (await _get(service, "/api/v1/deadletter"))["entries"]  # still refused: a new entry, the old one gone
    assert again["id"] != entry["id"] and "Code: 72" in again["reason"]
    assert (await _get(service, "/healthz"))["status"] == "degraded"


@pytest.mark.reliability("bad-data-never-blocks-storage")
async def test_a_spooled_wide_batch_does_not_wedge_storage_after_a_restart(service_config: ServiceConfig) -> None:
    """The 120-day batch reaches the spool during an outage; the next process must store it, then the rest."""
    first = Service(service_config)
    await first.start()
    try:

        async def unavailable(batch: Any) -> None:
            raise RetryableError("storage unavailable (injected)")

        first.span_writer.inserter.inserts.rows = Calling(unavailable)  # down until this process has stopped
        days = [BASE_NS + index * DAY_NS for index in range(120)]
        assert await _post(first, "traces", _body("traces", "spooled-days", days)) == 200
        assert first.metrics()["spans_spooled"] == 120
    finally:
        await first.shutdown()  # storage is down: the batch stays in the spool for the next process
    assert first.span_writer.spool is not None and first.span_writer.spool.batches == 1
    second = Service(service_config)
    await second.start()
    try:
        assert await _rows(second, "traces", "spooled-days", 120) == 120
        assert await _post(second, "traces", _body("traces", "after-restart", [BASE_NS])) == 200
        assert await _rows(second, "traces", "after-restart", 1) == 1
        assert second.metrics()["spans_dead_lettered"] == 0
    finally:
        await second.shutdown()
