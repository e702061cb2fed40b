"""Raw OTLP/HTTP requests: JSON bodies, gzip, partial success and every kind of bad input."""

from __future__ import annotations

import asyncio
import gzip
import json

import aiohttp
import grpc
import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.server.service import Service

TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"
PARENT_ID = "eee19b7ec3c1b173"
TIMES = {"start_time_unix_nano": 1_700_000_000 * 10**9, "end_time_unix_nano": 1_700_000_001 * 10**9}


def otlp_json(trace_id: str = TRACE_ID, span_id: str = SPAN_ID) -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-agent"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "raw", "version": "0.1"},
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": span_id,
                                "parentSpanId": PARENT_ID,
                                "name": "chat gpt-4o",
                                "kind": 3,
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000000250000000",
                                "attributes": [
                                    {"key": "s", "value": {"stringValue": "x"}},
                                    {"key": "i", "value": {"intValue": "7"}},
                                    {"key": "d", "value": {"doubleValue": 2.5}},
                                    {"key": "b", "value": {"boolValue": False}},
                                    {"key": "bytes", "value": {"bytesValue": "aGk="}},
                                    {
                                        "key": "nested",
                                        "value": {
                                            "kvlistValue": {
                                                "values": [
                                                    {
                                                        "key": "inner",
                                                        "value": {
                                                            "arrayValue": {
                                                                "values": [{"intValue": "1"}, {"stringValue": "two"}]
                                                            }
                                                        },
                                                    },
                                                    {
                                                        "key": "deep",
                                                        "value": {
                                                            "kvlistValue": {
                                                                "values": [{"key": "k", "value": {"boolValue": True}}]
                                                            }
                                                        },
                                                    },
                                                ]
                                            }
                                        },
                                    },
                                ],
                                "events": [{"timeUnixNano": "1700000000100000000", "name": "e1", "attributes": []}],
                                "status": {"code": 2, "message": "boom"},
                                "unknownFutureField": {"ignored": True},
                            }
                        ],
                    }
                ],
            }
        ]
    }


JSON = "application/json"


def _deep_attribute(depth: int) -> dict:
    """A span whose one attribute is an array nested ``depth`` times: deeper than protobuf accepts."""
    value: dict = {"stringValue": "x"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    document = otlp_json()
    document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [{"key": "deep", "value": value}]
    return document


async def _post(port: int, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes, dict[str, str]]:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"http://127.0.0.1:{port}{path}", data=body, headers=headers) as response:
            return response.status, await response.read(), dict(response.headers)


async def _count(service: Service) -> int:
    rows = await asyncio.to_thread(service.store.internal_query, "SELECT count() FROM otel_traces")
    return int(rows[0][0])


@pytest.mark.parametrize("compress", [False, True])
async def test_raw_json_post_is_stored(service: Service, compress: bool) -> None:
    body = json.dumps(otlp_json()).encode()
    headers = {"Content-Type": "application/json"}
    if compress:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    status, payload, response_headers = await _post(service.http.port, "/v1/traces", body, headers)
    assert status == 200, payload
    assert response_headers["Content-Type"].startswith("application/json")
    assert json.loads(payload) == {}
    rows = await asyncio.to_thread(
        service.store.internal_query,
        "SELECT TraceId, SpanId, ParentSpanId, SpanKind, StatusCode, StatusMessage, SpanAttributes, Duration,"
        " Events.Name, ServiceName FROM otel_traces",
    )
    assert len(rows) == 1
    trace_id, span_id, parent, kind, code, message, attributes, duration, events, service_name = rows[0]
    assert (trace_id, span_id, parent) == (TRACE_ID, SPAN_ID, PARENT_ID)
    assert (kind, code, message, service_name) == ("Client", "Error", "boom", "json-agent")
    assert duration == 250_000_000
    assert list(events) == ["e1"]
    assert attributes["i"] == "7" and attributes["d"] == "2.5" and attributes["b"] == "false"
    assert attributes["bytes"] == "aGk="
    assert json.loads(attributes["nested"]) == {"inner": [1, "two"], "deep": {"k": True}}


async def test_partial_success_rejects_only_bad_spans(service: Service) -> None:
    document = otlp_json()
    good = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    bad = dict(good, spanId="abcd")  # 2 bytes: not a span id
    document["resourceSpans"][0]["scopeSpans"][0]["spans"].append(bad)
    status, payload, _ = await _post(
        service.http.port, "/v1/traces", json.dumps(document).encode(), {"Content-Type": "application/json"}
    )
    assert status == 200
    answer = json.loads(payload)
    assert answer["partialSuccess"]["rejectedSpans"] == "1"
    assert "span_id" in answer["partialSuccess"]["errorMessage"]
    assert await _count(service) == 1


@pytest.mark.parametrize(
    ("path", "body", "headers", "expected_status", "expected_text"),
    [
        ("/v1/traces", b"\x0a\xff\xff\xff", {"Content-Type": "application/x-protobuf"}, 400, "protobuf"),
        ("/v1/traces", b"{not json", {"Content-Type": "application/json"}, 400, "JSON"),
        ("/v1/traces", b"[1, 2]", {"Content-Type": "application/json"}, 400, "JSON object"),
        (
            "/v1/traces",
            json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}).encode(),
            {"Content-Type": "application/json"},
            400,
            "hex",
        ),
        ("/v1/traces", b"hello", {"Content-Type": "text/plain"}, 415, "Content-Type"),
        ("/v1/traces", b"x" * 10, {"Content-Type": "application/json", "Content-Encoding": "br"}, 415, "Encoding"),
        ("/v1/traces", b"not gzip", {"Content-Type": "application/json", "Content-Encoding": "gzip"}, 400, "gzip"),
        (
            "/v1/traces",
            gzip.compress(json.dumps(otlp_json()).encode()) + gzip.compress(b"more"),
            {"Content-Type": "application/json", "Content-Encoding": "gzip"},
            400,
            "after the end of its gzip stream",
        ),
        ("/v1/traces", b'{"resourceSpans": ' + b"[" * 1500 + b"]" * 1500 + b"}", {"Content-Type": JSON}, 400, "depth"),
        ("/v1/traces", json.dumps(_deep_attribute(60)).encode(), {"Content-Type": JSON}, 400, "deep"),
        ("/v1/traces", b"x" * 5000, {"Content-Type": "application/x-protobuf"}, 413, "limit"),
        (
            "/v1/traces",
            gzip.compress(b"\x00" * 100_000),
            {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"},
            413,
            "decompressed",
        ),
    ],
)
async def test_bad_http_input_is_refused_and_changes_nothing(
    service_config, path: str, body: bytes, headers: dict[str, str], expected_status: int, expected_text: str
) -> None:
    service_config.collector.http.max_body_bytes = 4096
    service = Service(service_config)
    await service.start()
    try:
        status, payload, response_headers = await _post(service.http.port, path, body, headers)
        assert status == expected_status
        if response_headers["Content-Type"].startswith("application/x-protobuf"):
            message = status_pb2.Status.FromString(payload).message
        else:
            message = json.loads(payload)["message"]
        assert expected_text.lower() in message.lower()
        assert await _count(service) == 0
        # and the service keeps serving
        ok, _, _ = await _post(
            service.http.port, "/v1/traces", json.dumps(otlp_json()).encode(), {"Content-Type": "application/json"}
        )
        assert ok == 200
        assert await _count(service) == 1
    finally:
        await service.shutdown()


async def test_unknown_path_and_wrong_method(service: Service) -> None:
    status, _, _ = await _post(service.http.port, "/v1/nothing", b"{}", {"Content-Type": "application/json"})
    assert status == 404
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{service.http.port}/v1/traces") as response:
            assert response.status == 405


async def test_grpc_oversize_and_backpressure(service_config) -> None:
    service_config.collector.grpc.max_message_bytes = 2048
    service_config.storage.spool_max_bytes = 0  # no spool: a storage failure must reach the exporter as backpressure
    service = Service(service_config)
    await service.start()
    try:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{service.grpc.port}")
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        big = trace_service_pb2.ExportTraceServiceRequest()
        big.resource_spans.add().scope_spans.add().spans.add(
            name="x" * 4000, trace_id=b"\x01" * 16, span_id=b"\x02" * 8
        )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.Export(big)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

        # Storage failing: the exporter must be told to retry, with a hint, and nothing is stored.
        original = service.span_writer.inserter.inserts.rows

        async def failing(spans):
            raise RetryableError("storage down for the test", retry_after=3)

        service.span_writer.inserter.inserts.rows = Calling(failing)
        small = trace_service_pb2.ExportTraceServiceRequest()
        small.resource_spans.add().scope_spans.add().spans.add(
            name="s", trace_id=b"\x01" * 16, span_id=b"\x02" * 8, **TIMES
        )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.Export(small)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        trailers = dict(caught.value.trailing_metadata() or ())
        assert "google.rpc.retryinfo-bin" in trailers
        status, payload, headers = await _post(
            service.http.port, "/v1/traces", small.SerializeToString(), {"Content-Type": "application/x-protobuf"}
        )
        assert status == 503 and headers["Retry-After"] == "3"
        assert await _count(service) == 0

        service.span_writer.inserter.inserts.rows = original
        assert isinstance(await stub.Export(small), trace_service_pb2.ExportTraceServiceResponse)
        assert await _count(service) == 1
        await channel.close()
    finally:
        await service.shutdown()


async def test_bearer_tokens_on_both_receivers(service_config) -> None:
    service_config.collector.auth_tokens = ["s3cret"]
    service = Service(service_config)
    await service.start()
    try:
        body = json.dumps(otlp_json()).encode()
        for headers, expected in (
            ({}, 401),
            ({"Authorization": "Bearer wrong"}, 401),
            ({"Authorization": "Bearer s3cret"}, 200),
        ):
            status, _, _ = await _post(
                service.http.port, "/v1/traces", body, {"Content-Type": "application/json", **headers}
            )
            assert status == expected
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{service.grpc.port}")
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.resource_spans.add().scope_spans.add().spans.add(
            name="s", trace_id=b"\x03" * 16, span_id=b"\x04" * 8, **TIMES
        )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.Export(request, metadata=(("authorization", "Bearer nope"),))
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        await stub.Export(request, metadata=(("authorization", "Bearer s3cret"),))
        await channel.close()
        assert await _count(service) == 2
    finally:
        await service.shutdown()


@pytest.mark.reliability("keep-strangers-out")
async def test_grpc_checks_the_token_before_parsing_and_names_undecodable_messages(service_config) -> None:
    service_config.collector.auth_tokens = ["s3cret"]
    service = Service(service_config)
    await service.start()
    try:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{service.grpc.port}")
        for path in ("/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                     "/opentelemetry.proto.collector.logs.v1.LogsService/Export"):  # fmt: skip
            export = channel.unary_unary(path, request_serializer=None, response_deserializer=None)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await export(b"\x0a\xff\xff\xff")  # no token and not a message: the token decides
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await export(b"\x0a\xff\xff\xff", metadata=(("authorization", "Bearer s3cret"),))
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "protobuf" in (caught.value.details() or "")
        await channel.close()
        assert await _count(service) == 0
    finally:
        await service.shutdown()
