"""Input limits: too many spans refuses the request, long values are truncated visibly and counted."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from spanscore.config import ServiceConfig
from spanscore.service import Service
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
