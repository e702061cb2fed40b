"""Issue #37, item 4: decoding costs what it produces, not many times the request's bytes.

Against a real `spanscore serve`. Before, the protobuf parser built every message of a body before the caps on
events and attributes applied (2 MB of empty events: +55 MB, 27-29 times its size), and OTLP/JSON was parsed
whole in the worker process (8 MiB of empty events, 8 KB gzipped: +572 MB). Now a large protobuf body is
parsed a piece at a time and a span too dense to parse alone is refused by itself (partial success, the rest
stored); a JSON body with more objects than its size allows is refused before it is parsed. The figures are
bench/decode_amplification.py's; these bounds are generous.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import urllib.request
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.e2e.api_client import api_json
from tests.e2e.otlp_clients import http_exporter, record_agent_trace
from tests.e2e.served_memory import TOKEN, Served, serve

BASE_NS = 1_700_000_000 * 10**9
AUTH = {"authorization": f"Bearer {TOKEN}"}


def _dense_span_request(events: int) -> bytes:
    """A request of two spans: one with ``events`` empty events (2 bytes each on the wire), one ordinary."""
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for number, name in ((1, "dense"), (2, "fine")):
        spans.add(
            trace_id=b"\x09" * 16, span_id=number.to_bytes(8, "big"), name=name,
            start_time_unix_nano=BASE_NS, end_time_unix_nano=BASE_NS + 1,
        )  # fmt: skip
    one = spans[0].SerializeToString()
    spans[0].events.add()
    event = spans[0].SerializeToString()[len(one) :]
    spans[0].ClearField("events")
    spans[0].MergeFromString(event * events)
    return bytes(request.SerializeToString())


def _stored_names(served: Served) -> list[str]:
    body = {"sql": "SELECT DISTINCT SpanName FROM otel_traces WHERE TraceId = repeat('09', 16) ORDER BY 1"}
    return [row["SpanName"] for row in api_json(served.api_port, "/api/v1/query", body)["data"]]


@pytest.mark.reliability("bounded-memory-backpressure")
def test_a_span_of_empty_events_is_refused_alone_before_it_is_parsed(tmp_path: Path) -> None:
    """8,000,000 empty events in one span (16 MB) beside a good span, over gRPC: that span refused, the other kept."""
    body = _dense_span_request(8_000_000)

    async def export(port: int) -> ExportTraceServiceResponse:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            answer = await channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")(
                body, metadata=tuple(AUTH.items()), timeout=120
            )
        return ExportTraceServiceResponse.FromString(answer)

    with serve(tmp_path) as served:
        with served.measure() as peak:
            answer = asyncio.run(export(served.grpc_port))
        assert peak.growth_mib < 150, f"a 16 MB body grew the service by {peak.growth_mib:.0f} MiB"
        assert answer.partial_success.rejected_spans == 1, answer
        assert "protobuf messages" in answer.partial_success.error_message
        assert _stored_names(served) == ["fine"]


def _empty_events_json(size: int) -> bytes:
    span = {
        "traceId": "09" * 16, "spanId": "00000000000000aa", "name": "dense",
        "startTimeUnixNano": str(BASE_NS), "endTimeUnixNano": str(BASE_NS + 1),
    }  # fmt: skip
    head = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{**span, "events": ["HOLE"]}]}]}]})
    before, after = head.split('"HOLE"')
    count = (size - len(head)) // 3
    return (before + ",".join(["{}"] * count) + after).encode()


@pytest.mark.reliability("bounded-memory-backpressure")
def test_otlp_json_of_empty_objects_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """8 MiB of OTLP/JSON empty events, 8 KB gzipped: 413 naming the count, before any object is built."""
    body = gzip.compress(_empty_events_json(8 << 20), 9)
    assert len(body) < 64 << 10
    with serve(tmp_path) as served:
        request = urllib.request.Request(
            f"http://127.0.0.1:{served.http_port}/v1/traces", data=body, method="POST",
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip", **AUTH},
        )  # fmt: skip
        with served.measure() as peak:
            status, answer = _send(request)
        assert peak.growth_mib < 150, f"8 KB of gzipped JSON grew the service by {peak.growth_mib:.0f} MiB"
        assert status == 413, (status, answer)
        assert "JSON objects and arrays" in answer["message"], answer
        # An ordinary export through the real SDK exporter is stored as before.
        exporter = http_exporter(served.http_port, headers=AUTH)
        try:
            assert exporter.export(record_agent_trace()) == SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()


def _send(request: urllib.request.Request) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
