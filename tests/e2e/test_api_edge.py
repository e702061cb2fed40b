"""The API listener's edge against a running service: browsers cannot use it, /metrics is guarded and valid.

Observed on the token-less default: a page on another origin ran queries through ``GET ?sql=`` and a
``text/plain`` POST, any Host header was answered (DNS rebinding), ``/metrics`` answered without a
token while tokens were set, and ``/metrics`` was not Prometheus text (labels inside names, counters
typed as gauges). Each is checked here through real sockets; a spy on the store's query method
records every query that reached the engine, so a refusal is also shown to have run nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import _wait_for, agent_traces

TOKEN = "edge-test-token"
# A rule name with the characters Prometheus must escape that a name may hold (a newline is refused when
# the rule is validated: names reach logs and terminals too).
ODD_RULE = 'rag "v2" \\ one rule'


@pytest.fixture
async def edge(service_config: ServiceConfig) -> AsyncIterator[tuple[Service, list[str]]]:
    """A running service whose store records each query it is asked to run."""
    service = Service(service_config)
    await service.start()
    ran: list[str] = []
    real_query = service.store.query

    async def recording_query(sql: str, fmt: str) -> bytes:
        ran.append(sql)
        return await real_query(sql, fmt)

    service.store.query = recording_query  # type: ignore[method-assign]
    try:
        yield service, ran
    finally:
        await service.shutdown()


def base(service: Service) -> str:
    assert service.api is not None
    return f"http://127.0.0.1:{service.api.port}"


async def call(method: str, url: str, **options: Any) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session:
        async with session.request(method, url, **options) as response:
            body = await response.json() if response.content_type == "application/json" else await response.text()
            return response.status, body


@pytest.mark.reliability("keep-strangers-out")
async def test_a_query_by_get_or_by_a_simple_post_is_refused_and_runs_nothing(edge: tuple[Service, list[str]]) -> None:
    service, ran = edge
    url = base(service) + "/api/v1/query"
    async with aiohttp.ClientSession() as session:
        async with session.get(url, params={"sql": "SELECT 1"}) as response:
            assert response.status == 405 and response.headers["Allow"] == "POST"
            assert "POST the query as JSON" in (await response.json())["error"]
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        status, body = await call("POST", url, data=b"SELECT 1", headers={"Content-Type": content_type})
        assert status == 415 and "application/json" in body["error"], (content_type, body)
    status, body = await call("POST", base(service) + "/api/v1/backfill", data=b'{"rule": "r"}')
    assert status == 415 and "application/json" in body["error"], body
    assert ran == []
    status, body = await call("POST", url, json={"sql": "SELECT 1 AS one"})
    assert status == 200 and body["data"] == [{"one": 1}], body
    assert ran == ["SELECT 1 AS one"]


@pytest.mark.reliability("keep-strangers-out")
async def test_another_origin_or_host_gets_nothing_on_any_path(edge: tuple[Service, list[str]]) -> None:
    service, ran = edge
    root = base(service)
    port = service.api.port if service.api else 0
    refusals = [
        ({"Origin": "http://127.0.0.1:8888"}, 403, "Origin"),
        ({"Origin": f"http://localhost:{port}"}, 403, "Origin"),
        ({"Sec-Fetch-Site": "same-site"}, 403, "Sec-Fetch-Site"),
        ({"Host": f"attacker.example:{port}"}, 421, "Host"),
    ]
    for headers, wanted, header in refusals:
        for method, path, options in [
            ("POST", "/api/v1/query", {"json": {"sql": "SELECT 1"}}),
            ("POST", "/api/v1/backfill", {"data": b'{"rule": "r"}', "headers": {"Content-Type": "text/plain"}}),
            ("GET", "/api/v1/status", {}),
            ("GET", "/metrics", {}),
            ("GET", "/api/v1/dashboard/scorers", {}),
            ("GET", "/dashboard/", {}),
        ]:
            sent = options.get("headers", {}) | headers
            status, body = await call(method, root + path, **(options | {"headers": sent}))
            assert status == wanted, (headers, path, body)
            assert header in body["error"] and "api.allowed_hosts" in body["error"], body
    assert ran == []
    status, _ = await call("POST", root + "/api/v1/query", json={"sql": "SELECT 1"}, headers={"Origin": root})
    assert (status, ran) == (200, ["SELECT 1"])


@pytest.mark.reliability("keep-strangers-out")
async def test_metrics_need_the_api_token_when_tokens_are_set(service_config: ServiceConfig) -> None:
    service_config.api.auth_tokens = [TOKEN]
    service = Service(service_config)
    await service.start()
    try:
        url = base(service) + "/metrics"
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            status, body = await call("GET", url, headers=headers)
            assert status == 401 and "bearer token" in body["error"], body
        status, text = await call("GET", url, headers={"Authorization": f"Bearer {TOKEN}"})
        assert status == 200 and "spanscore_spans_received_total" in text
    finally:
        await service.shutdown()
    service_config.api.metrics_public = True
    service = Service(service_config)
    await service.start()
    try:
        status, text = await call("GET", base(service) + "/metrics")
        assert status == 200 and "spanscore_spans_received_total" in text
    finally:
        await service.shutdown()


async def test_metrics_parse_as_prometheus_text_with_types_and_labels(service_config: ServiceConfig) -> None:
    service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
    service_config.scoring.poll_interval_s = 0.05
    service_config.rules = [RuleConfig.model_validate({"name": ODD_RULE, "scorers": ["completeness"]})]
    spans = agent_traces(2)
    service = Service(service_config)
    await service.start()
    try:
        assert service.grpc is not None
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        assert await _wait_for(service, "SELECT count() FROM scores", 2) >= 2
        status, text = await call("GET", base(service) + "/metrics")
        assert status == 200
    finally:
        await service.shutdown()
    families = {family.name: family for family in text_string_to_metric_families(text)}
    assert all(name.startswith("spanscore_") and "{" not in name for name in families), sorted(families)
    assert {name: f.type for name, f in families.items() if f.type not in ("counter", "gauge")} == {}
    assert families["spanscore_spans_received"].type == "counter"
    assert families["spanscore_spans_pending"].type == "gauge"
    assert families["spanscore_scoring_queue_depth"].type == "gauge"
    [received] = families["spanscore_spans_received"].samples
    assert received.name == "spanscore_spans_received_total" and received.value == len(spans)
    scores = families["spanscore_scores_written"]
    assert scores.type == "counter"
    assert {(s.name, s.labels["rule"], s.labels["status"]) for s in scores.samples} >= {
        ("spanscore_scores_written_total", ODD_RULE, "ok")
    }
    decisions = families["spanscore_decisions_written"]
    assert {s.labels["decision"] for s in decisions.samples} == {"sampled"}
    ended = families["spanscore_scoring_jobs_ended"]
    assert ended.type == "counter" and {s.labels["state"] for s in ended.samples} >= {"succeeded"}
