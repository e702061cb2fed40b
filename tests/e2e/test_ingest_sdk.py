"""The real OTel SDK exporters (gRPC and HTTP/protobuf) send spans; every field arrives intact."""

from __future__ import annotations

import asyncio
import json

import pytest

from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter, http_exporter, record_agent_trace


async def _rows(service: Service, sql: str) -> list[tuple]:
    return await asyncio.to_thread(service.store.internal_query, sql)


@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_sdk_spans_arrive_intact(service: Service, protocol: str) -> None:
    spans = record_agent_trace()
    port = service.grpc.port if protocol == "grpc" else service.http.port
    exporter = grpc_exporter(port) if protocol == "grpc" else http_exporter(port)
    assert await asyncio.to_thread(export, exporter, spans) == "SUCCESS"

    rows = await _rows(
        service,
        "SELECT TraceId, SpanId, ParentSpanId, SpanName, SpanKind, ServiceName, ResourceAttributes, ScopeName,"
        " ScopeVersion, SpanAttributes, Duration, StatusCode, StatusMessage, Events.Name, Events.Attributes,"
        " Links.TraceId, Links.SpanId, Links.Attributes, toUnixTimestamp64Nano(Timestamp)"
        " FROM otel_traces ORDER BY SpanName",
    )
    assert len(rows) == 2
    by_name = {row[3]: row for row in rows}
    originals = {s.name: s for s in spans}
    for name, row in by_name.items():
        original = originals[name]
        context = original.get_span_context()
        assert row[0] == f"{context.trace_id:032x}"
        assert row[1] == f"{context.span_id:016x}"
        assert row[18] == original.start_time
        assert row[10] == original.end_time - original.start_time
        assert row[5] == "e2e-agent"
        assert row[6]["deployment.environment"] == "test"
        assert (row[7], row[8]) == ("spanscore.tests", "1.2.3")

    root = by_name["invoke_agent triage"]
    attributes = root[9]
    assert attributes["text"] == "héllo ✓"
    assert attributes["count"] == "42"
    assert attributes["ratio"] == "0.25"
    assert attributes["flag"] == "true"
    assert json.loads(attributes["strings"]) == ["a", "b"]
    assert json.loads(attributes["ints"]) == [1, 2, 3]
    assert json.loads(attributes["floats"]) == [1.5, 2.5]
    assert json.loads(attributes["bools"]) == [True, False]
    assert root[4] == "Internal"
    assert root[2] == ""
    assert list(root[13]) == ["gen_ai.user.message"]
    assert root[14][0] == {"content": "What is the weather?"}

    child = by_name["execute_tool search"]
    assert child[2] == root[1]
    assert child[4] == "Client"
    assert (child[11], child[12]) == ("Error", "tool timed out")
    assert list(child[15]) == [root[0]] and list(child[16]) == [root[1]]
    assert child[17][0] == {"link.kind": "caused_by"}


async def test_query_counts_what_was_sent(service: Service) -> None:
    traces = [record_agent_trace("counted") for _ in range(3)]
    for spans in traces:
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
    # The very same export again (an exporter retrying after a lost ack) is the same block: stored once.
    assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), traces[0]) == "SUCCESS"
    body = await service.store.query("SELECT count() AS n FROM otel_traces WHERE ServiceName = 'counted'")
    assert json.loads(body)["data"] == [{"n": "6"}] or json.loads(body)["data"] == [{"n": 6}]
