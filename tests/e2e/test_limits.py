"""Input limits: too many spans refuses the request, long values are truncated visibly and counted."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from spanscore.config import ServiceConfig
from spanscore.server.service import Service
from tests.e2e.test_http_json_and_errors import otlp_json


async def test_limits(service_config: ServiceConfig) -> None:
    service_config.collector.limits.max_spans_per_request = 1
    service_config.collector.limits.max_attribute_value_chars = 100
    service_config.collector.limits.max_attributes_per_span = 3
    service = Service(service_config)
    await service.start()
    url = f"http://127.0.0.1:{service.http.port}/v1/traces"
    try:
        document = otlp_json()
        span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        span["attributes"] = [{"key": "long", "value": {"stringValue": "x" * 250}}] + span["attributes"]
        two = json.loads(json.dumps(document))
        two["resourceSpans"][0]["scopeSpans"][0]["spans"].append(dict(span, spanId="eee19b7ec3c1b175"))
        async with aiohttp.ClientSession() as session:
            async with session.post(url, json=two) as response:
                assert response.status == 413
                assert "limit is 1 per request" in (await response.json())["message"]
            async with session.post(url, json=document) as response:
                assert response.status == 200
        rows = await asyncio.to_thread(service.store.internal_query, "SELECT SpanAttributes FROM otel_traces")
        assert len(rows) == 1
        attributes = rows[0][0]
        assert len(attributes) == 3  # 7 sent, the first 3 kept
        assert attributes["long"] == "x" * 100 + "...[truncated by spanscore: 150 more characters]"
        metrics = service.metrics()
        assert metrics["attribute_values_truncated"] == 1
        assert metrics["attributes_dropped"] == 4
        assert metrics["requests_refused_too_many_spans"] == 1
    finally:
        await service.shutdown()


def _large_export(spans: int) -> bytes:
    """An OTLP/JSON export of ``spans`` small spans (about 400 bytes each), built as text for speed."""
    template = json.dumps(otlp_json())
    document = json.loads(template)
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    document["resourceSpans"][0]["scopeSpans"][0]["spans"] = [
        dict(span, traceId=f"{index + 1:032x}", spanId=f"{index + 1:016x}") for index in range(spans)
    ]
    return json.dumps(document).encode()


@pytest.mark.reliability("no-request-stalls-others")
async def test_a_large_export_does_not_hold_the_other_listeners(service: Service) -> None:
    """While a 40,000-span OTLP/JSON export is decoded, a small export and the API's health check finish first."""
    large = _large_export(40_000)
    small = json.dumps(otlp_json(span_id="eee19b7ec3c1b179")).encode()
    finished: list[str] = []
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession() as session:

        async def post(name: str, body: bytes) -> int:
            async with session.post(f"http://127.0.0.1:{service.http.port}/v1/traces", data=body, headers=headers) as r:
                await r.read()
                finished.append(name)
                return r.status

        async def health() -> int:
            async with session.get(f"http://127.0.0.1:{service.api.port}/healthz") as r:
                await r.read()
                finished.append("health")
                return r.status

        large_task = asyncio.create_task(post("large", large))
        await asyncio.sleep(0.3)  # the large body is uploaded and being decoded
        assert not large_task.done()
        assert await asyncio.gather(post("small", small), health()) == [200, 200]
        assert await large_task == 200
    assert finished[-1] == "large", finished
    rows = await asyncio.to_thread(service.store.internal_query, "SELECT count() FROM otel_traces")
    assert rows[0][0] == 40_001


@pytest.mark.reliability("bad-input-clear-error")
async def test_log_exports_have_request_and_string_limits(service_config: ServiceConfig) -> None:
    service_config.collector.limits.max_log_records_per_request = 2
    service_config.collector.limits.max_attribute_value_chars = 100
    service_config.collector.limits.max_resource_attribute_value_chars = 64
    service = Service(service_config)
    await service.start()
    url = f"http://127.0.0.1:{service.http.port}/v1/logs"

    def logs(count: int) -> dict:
        record = {"timeUnixNano": "1700000000000000000", "body": {"stringValue": "b" * 300}, "severityText": "INFO"}
        resource = {"attributes": [{"key": "big", "value": {"stringValue": "r" * 5000}}]}
        return {"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": [record] * count}]}]}

    try:
        async with aiohttp.ClientSession() as session:
            async with session.post(url, json=logs(3)) as response:
                assert response.status == 413
                assert "3 log records; the limit is 2" in (await response.json())["message"]
            async with session.post(url, json=logs(2)) as response:
                assert response.status == 200
        rows = await asyncio.to_thread(service.store.internal_query, "SELECT Body, ResourceAttributes FROM otel_logs")
        assert len(rows) == 2
        body, resource = rows[0]
        assert body == "b" * 100 + "...[truncated by spanscore: 200 more characters]"
        assert resource["big"] == "r" * 64 + "...[truncated by spanscore: 4936 more characters]"
        assert service.ingest.limit_counters.refused_log_requests == 1
    finally:
        await service.shutdown()


async def test_large_bad_json_is_refused_by_the_worker_with_its_reason(service: Service) -> None:
    """Bodies over 64 KiB are decoded away from the loop; their errors still reach the client as 400s."""
    url = f"http://127.0.0.1:{service.http.port}/v1/traces"
    spans = json.loads(_large_export(300))
    spans["resourceSpans"][0]["scopeSpans"][0]["spans"][5]["traceId"] = "not hex"
    async with aiohttp.ClientSession() as session:
        for body, reason in ((b'{"resourceSpans": [' + b" " * 70_000 + b"{", "not valid JSON"),
                             (json.dumps(spans).encode(), "not a hex id")):  # fmt: skip
            assert len(body) > 64 << 10
            async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as response:
                assert response.status == 400
                assert reason in (await response.json())["message"]
    rows = await asyncio.to_thread(service.store.internal_query, "SELECT count() FROM otel_traces")
    assert rows[0][0] == 0
