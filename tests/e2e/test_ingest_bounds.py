"""Issue #26, ingest: every OTLP input is bounded before it costs memory or reaches storage.

Real receivers on loopback (OTLP/HTTP and OTLP/gRPC) into the real embedded engine: the Host guard on the
OTLP/HTTP listener, token-less receivers kept on loopback, caps on events and links, a bounded value depth,
id lengths and timestamps checked with a partial-success message naming the field.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import aiohttp
import grpc
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from spanscore.config import ServiceConfig
from spanscore.errors import ConfigError
from spanscore.server.service import Service
from tests.e2e.test_http_json_and_errors import otlp_json

BASE_NS = 1_700_000_000 * 10**9
PROTOBUF = {"Content-Type": "application/x-protobuf"}


def _evaluation_export() -> dict[str, Any]:
    """A span carrying a forged ``gen_ai.evaluation.result`` event: what a rebinding page would send."""
    document = otlp_json()
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    attributes = [("gen_ai.evaluation.name", "forged"), ("gen_ai.evaluation.score.value", "0.0")]
    span["events"] = [
        {
            "timeUnixNano": str(BASE_NS),
            "name": "gen_ai.evaluation.result",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes],
        }
    ]
    return document


async def _post(service: Service, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    assert service.http is not None
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"http://127.0.0.1:{service.http.port}{path}", data=body, headers=headers) as response,
    ):
        payload = await response.read()
        if response.content_type == "application/json":
            return response.status, json.loads(payload)
        return response.status, payload


async def _count(service: Service, sql: str) -> int:
    return int((await asyncio.to_thread(service.store.internal_query, sql))[0][0])


@pytest.mark.reliability("keep-strangers-out")
async def test_the_otlp_http_receiver_refuses_unknown_host_names(service_config: ServiceConfig) -> None:
    """A page on another site, through a name rebound to 127.0.0.1, must not write spans or evaluation scores."""
    service_config.collector.http.allowed_hosts = ["collector.internal"]
    service = Service(service_config)
    await service.start()
    try:
        port = service.http.port if service.http else 0
        body = json.dumps(_evaluation_export()).encode()
        for host in (f"rebound.attacker.example:{port}", "rebound.attacker.example", ""):
            status, answer = await _post(
                service, "/v1/traces", body, {"Content-Type": "application/json", "Host": host}
            )
            assert status == 421, host
            assert "collector.http.allowed_hosts" in answer["message"]
        assert await _count(service, "SELECT count() FROM otel_traces") == 0
        assert service.metrics()["otlp_evaluations_received"] == 0
        for host, span_id in ((f"localhost:{port}", "eee19b7ec3c1b101"), ("collector.internal", "eee19b7ec3c1b102")):
            document = _evaluation_export()
            document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = span_id
            status, _ = await _post(
                service, "/v1/traces", json.dumps(document).encode(), {"Content-Type": "application/json", "Host": host}
            )
            assert status == 200, host
        assert await _count(service, "SELECT count() FROM otel_traces") == 2
    finally:
        await service.shutdown()


@pytest.mark.reliability("keep-strangers-out")
@pytest.mark.parametrize("receiver", ["grpc", "http"])
async def test_a_token_less_receiver_refuses_to_listen_beyond_loopback(
    service_config: ServiceConfig, receiver: str
) -> None:
    """Without collector.auth_tokens the receivers stay on loopback: a wider bind stops the start, naming why."""
    getattr(service_config.collector, receiver).host = "192.0.2.1"  # TEST-NET: never bound, the check comes first
    service = Service(service_config)
    with pytest.raises(ConfigError) as caught:
        await service.start()
    await service.shutdown()
    message = str(caught.value)
    assert f"collector.{receiver}.host" in message and "collector.auth_tokens" in message


def _span(request: trace_service_pb2.ExportTraceServiceRequest, span_id: int, **fields: Any) -> Any:
    spans = request.resource_spans[0].scope_spans[0].spans if request.resource_spans else None
    if spans is None:
        resource = request.resource_spans.add()
        resource.resource.attributes.add(key="service.name").value.string_value = "bounds"
        spans = resource.scope_spans.add().spans
    values = {
        "trace_id": b"\x07" * 16,
        "span_id": span_id.to_bytes(8, "big"),
        "name": f"span-{span_id}",
        "start_time_unix_nano": BASE_NS,
        "end_time_unix_nano": BASE_NS + 1000,
    }
    values.update(fields)
    return spans.add(**values)


async def _export_both_ways(service: Service, request: trace_service_pb2.ExportTraceServiceRequest) -> list[Any]:
    """The partial successes one request got over OTLP/HTTP (protobuf), OTLP/HTTP (JSON) and OTLP/gRPC.

    The three stores of the same spans are one insert block each, which the engine deduplicates: read back
    which spans exist, not how many rows.
    """
    answers = []
    status, payload = await _post(service, "/v1/traces", request.SerializeToString(), PROTOBUF)
    assert status == 200
    answers.append(trace_service_pb2.ExportTraceServiceResponse.FromString(payload).partial_success)
    document = json_format.MessageToDict(request)
    for resource in document["resourceSpans"]:  # OTLP/JSON carries ids as hex, not base64
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
                for link in span.get("links", []):
                    for key in ("traceId", "spanId"):
                        link[key] = base64.b64decode(link.get(key, "")).hex()
    status, answer = await _post(
        service, "/v1/traces", json.dumps(document).encode(), {"Content-Type": "application/json"}
    )
    assert status == 200, answer
    answers.append(json_format.ParseDict(answer, trace_service_pb2.ExportTraceServiceResponse()).partial_success)
    assert service.grpc is not None
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.grpc.port}") as channel:
        reply = await trace_service_pb2_grpc.TraceServiceStub(channel).Export(request)
        answers.append(reply.partial_success)
    return answers


@pytest.mark.reliability("bad-input-clear-error")
async def test_events_links_and_their_attributes_are_capped_while_decoding(service: Service) -> None:
    """300 events, 200 links and an event with 200 attributes: kept with the excess dropped and counted."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    span = _span(request, 1)
    for index in range(300):
        span.events.add(time_unix_nano=BASE_NS + index, name=f"e{index}")
    for index in range(200):
        span.links.add(trace_id=b"\x08" * 16, span_id=(index + 1).to_bytes(8, "big"))
    for index in range(200):
        span.events[0].attributes.add(key=f"k{index}").value.string_value = "v"
        span.links[0].attributes.add(key=f"k{index}").value.string_value = "v"
    status, payload = await _post(service, "/v1/traces", request.SerializeToString(), PROTOBUF)
    assert status == 200
    assert not trace_service_pb2.ExportTraceServiceResponse.FromString(payload).HasField("partial_success")
    [(events, links, event_attributes, link_attributes)] = await asyncio.to_thread(
        service.store.internal_query,
        "SELECT length(Events.Name), length(Links.SpanId), length(Events.Attributes[1]), "
        "length(Links.Attributes[1]) FROM otel_traces",
    )
    assert (events, links, event_attributes, link_attributes) == (128, 128, 128, 128)
    metrics = service.metrics()
    assert metrics["span_events_dropped"] == 172
    assert metrics["span_links_dropped"] == 72
    assert metrics["attributes_dropped"] == 144


async def _stored_names(service: Service) -> list[str]:
    rows = await asyncio.to_thread(service.store.internal_query, "SELECT DISTINCT SpanName FROM otel_traces ORDER BY 1")
    return [str(row[0]) for row in rows]


def _nested(depth: int) -> AnyValue:
    value = AnyValue(string_value="x")
    for level in range(depth):
        outer = AnyValue()
        if level % 2:
            outer.kvlist_value.values.add(key="k").value.CopyFrom(value)
        else:
            outer.array_value.values.add().CopyFrom(value)
        value = outer
    return value


@pytest.mark.reliability("bad-input-clear-error")
async def test_values_nested_past_the_depth_limit_refuse_their_span_on_every_receiver(service: Service) -> None:
    """An attribute nested 34 deep (protobuf and JSON still parse it) refuses its span, names the key; no 500."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    _span(request, 1).attributes.add(key="deep").value.CopyFrom(_nested(34))
    _span(request, 2).attributes.add(key="fine").value.CopyFrom(_nested(31))
    for partial in await _export_both_ways(service, request):
        assert partial.rejected_spans == 1
        assert "'deep'" in partial.error_message and "32" in partial.error_message
    assert await _stored_names(service) == ["span-2"]


@pytest.mark.reliability("bad-input-clear-error")
async def test_ids_of_the_wrong_length_are_refused_naming_the_field(service: Service) -> None:
    """A link with a 3-byte trace id, a log with a 3-byte span id: refused with a partial success, not stored."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    _span(request, 1).links.add(trace_id=b"\x01\x02\x03", span_id=b"\x02" * 8)
    _span(request, 2).links.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 3)
    _span(request, 3)
    for partial in await _export_both_ways(service, request):
        assert partial.rejected_spans == 2
        assert "links[0].trace_id" in partial.error_message and "3" in partial.error_message
    assert await _stored_names(service) == ["span-3"]
    logs = logs_service_pb2.ExportLogsServiceRequest()
    records = logs.resource_logs.add().scope_logs.add().log_records
    records.add(time_unix_nano=BASE_NS, trace_id=b"\x01" * 16, span_id=b"\x02" * 3)
    records.add(time_unix_nano=BASE_NS, trace_id=b"\x01" * 5, span_id=b"\x02" * 8)
    records.add(time_unix_nano=BASE_NS, trace_id=b"\x01" * 16, span_id=b"\x02" * 8)
    status, payload = await _post(service, "/v1/logs", logs.SerializeToString(), PROTOBUF)
    assert status == 200
    partial = logs_service_pb2.ExportLogsServiceResponse.FromString(payload).partial_success
    assert partial.rejected_log_records == 2
    assert "span_id" in partial.error_message and "3" in partial.error_message
    assert await _count(service, "SELECT count() FROM otel_logs") == 1


YEAR_2302_NS = 10_500_000_000 * 10**9
LARGEST_FIXED64 = 2**64 - 1


@pytest.mark.reliability("bad-input-clear-error")
async def test_times_storage_cannot_hold_are_refused_and_nothing_downstream_degrades(service: Service) -> None:
    """Spans at 2^64-1 ns, in year 2302, before 1970-01-02, or with such an event; logs likewise: refused."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    _span(request, 1, start_time_unix_nano=LARGEST_FIXED64, end_time_unix_nano=LARGEST_FIXED64)
    _span(request, 2, start_time_unix_nano=YEAR_2302_NS, end_time_unix_nano=YEAR_2302_NS + 1)
    _span(request, 3, start_time_unix_nano=5, end_time_unix_nano=10)
    _span(request, 4, end_time_unix_nano=YEAR_2302_NS)
    _span(request, 5).events.add(time_unix_nano=LARGEST_FIXED64, name="late")
    _span(request, 6)
    for partial in await _export_both_ways(service, request):
        assert partial.rejected_spans == 5
        assert "start_time_unix_nano" in partial.error_message and "1970-01-02" in partial.error_message
    assert await _stored_names(service) == ["span-6"]
    assert await _count(service, "SELECT countIf(toYear(Timestamp) != 2023) FROM otel_traces") == 0
    logs = logs_service_pb2.ExportLogsServiceRequest()
    records = logs.resource_logs.add().scope_logs.add().log_records
    records.add(time_unix_nano=LARGEST_FIXED64)
    records.add(observed_time_unix_nano=YEAR_2302_NS)
    records.add(time_unix_nano=BASE_NS)
    status, payload = await _post(service, "/v1/logs", logs.SerializeToString(), PROTOBUF)
    assert status == 200
    partial = logs_service_pb2.ExportLogsServiceResponse.FromString(payload).partial_success
    assert partial.rejected_log_records == 2 and "time_unix_nano" in partial.error_message
    assert await _count(service, "SELECT count() FROM otel_logs") == 1
    await asyncio.sleep(0.2)
    metrics = service.metrics()
    assert metrics["spans_dead_lettered"] == 0 and metrics["logs_dead_lettered"] == 0
    assert service.api is not None
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{service.api.port}/healthz") as got,
    ):
        assert (await got.json())["status"] == "ok"
