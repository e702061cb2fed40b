"""OTLP metrics from the real SDK exporters (gRPC, HTTP/protobuf) and OTLP/JSON reach the otel_metrics_* tables.

Issue #39 item 3: an app that sets OTEL_EXPORTER_OTLP_ENDPOINT sends metrics too, and spanscore answered
/v1/metrics with 404 and the gRPC MetricsService with UNIMPLEMENTED, so the app logged an export error every
interval. These tests send what such an app sends and read it back through the query API.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from spanscore.errors import RetryableError
from spanscore.pipeline import Calling
from spanscore.server.service import Service
from tests.e2e.api_client import api_call, api_json
from tests.e2e.metric_clients import DURATION, TOKENS, Recorder, every_kind, metric_exporter, send
from tests.e2e.test_dashboard import TOKEN, BrowserWatch, chromium_path


def query(service: Service, sql: str) -> list[dict[str, Any]]:
    assert service.api is not None
    rows: list[dict[str, Any]] = api_json(service.api.port, "/api/v1/query", {"sql": sql, "format": "json"})["data"]
    return rows


async def rows(service: Service, sql: str) -> list[dict[str, Any]]:
    return await asyncio.to_thread(query, service, sql)


def port(service: Service, protocol: str) -> int:
    listener = service.grpc if protocol == "grpc" else service.http
    assert listener is not None
    return listener.port


@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_sdk_metrics_of_every_kind_are_stored(service: Service, protocol: str) -> None:
    data = every_kind(f"metrics-{protocol}")
    assert await asyncio.to_thread(send, metric_exporter(protocol, port(service, protocol)), data) == "SUCCESS"

    where = f"ServiceName = 'metrics-{protocol}'"
    sums = await rows(
        service,
        "SELECT MetricName, MetricUnit, MetricDescription, Value, IsMonotonic, AggregationTemporality, Attributes,"
        f" ScopeName, ScopeVersion FROM otel_metrics_sum WHERE {where} ORDER BY MetricName",
    )
    assert [(r["MetricName"], float(r["Value"]), bool(r["IsMonotonic"])) for r in sums] == [
        ("queue.depth", -2.0, False),
        ("requests", 3.0, True),
    ]
    requests = sums[1]
    assert (requests["MetricUnit"], requests["MetricDescription"]) == ("1", "requests served")
    assert requests["Attributes"] == {"route": "/a"} and requests["AggregationTemporality"] == 2
    assert (requests["ScopeName"], requests["ScopeVersion"]) == ("spanscore.tests.metrics", "0.1")

    gauge = await rows(service, f"SELECT MetricName, Value, Attributes FROM otel_metrics_gauge WHERE {where}")
    assert gauge == [{"MetricName": "temperature", "Value": 21.5, "Attributes": {"room": "lab"}}]

    histograms = await rows(
        service,
        "SELECT MetricName, Count, Sum, Min, Max, BucketCounts, ExplicitBounds, Attributes"
        f" FROM otel_metrics_histogram WHERE {where} ORDER BY MetricName, Attributes['gen_ai.token.type']",
    )
    assert [(r["MetricName"], int(r["Count"]), float(r["Sum"])) for r in histograms] == [
        (DURATION, 1, 0.25),
        (TOKENS, 1, 10.0),
        (TOKENS, 1, 5.0),
    ]
    tokens = histograms[1]
    assert len(tokens["BucketCounts"]) == len(tokens["ExplicitBounds"]) + 1
    assert sum(int(count) for count in tokens["BucketCounts"]) == 1
    assert tokens["Attributes"]["gen_ai.request.model"] == "gpt-4o-mini"

    exponential = await rows(
        service,
        "SELECT MetricName, Count, Sum, Scale, ZeroCount, PositiveBucketCounts, Min, Max"
        f" FROM otel_metrics_exponential_histogram WHERE {where}",
    )
    assert len(exponential) == 1
    point = exponential[0]
    assert (point["MetricName"], int(point["Count"]), float(point["Sum"])) == ("latency.exp", 4, 1007.0)
    assert sum(int(count) for count in point["PositiveBucketCounts"]) == 4
    assert (float(point["Min"]), float(point["Max"])) == (1.0, 1000.0)


def _summary_and_bad_points(service_name: str) -> dict[str, Any]:
    """An OTLP/JSON export with a summary, a good gauge point and three points no store can take."""
    start, now = "1700000000000000000", "1700000060000000000"
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service_name}}]}
    metrics = [
        {
            "name": "rpc.latency",
            "unit": "ms",
            "summary": {
                "dataPoints": [
                    {
                        "startTimeUnixNano": start,
                        "timeUnixNano": now,
                        "count": "4",
                        "sum": 10.0,
                        "quantileValues": [{"quantile": 0.5, "value": 2.0}, {"quantile": 0.99, "value": 5.0}],
                    }
                ]
            },
        },
        {
            "name": "gauge.mixed",
            "gauge": {
                "dataPoints": [
                    {"timeUnixNano": now, "asDouble": 1.5},
                    {"timeUnixNano": now},  # no value at all
                    {"timeUnixNano": "0", "asInt": "3"},  # no time
                ]
            },
        },
        {
            "name": "bad.histogram",
            "histogram": {
                "aggregationTemporality": 1,
                "dataPoints": [
                    # three bounds need four bucket counts
                    {"timeUnixNano": now, "count": "2", "bucketCounts": ["1", "1"], "explicitBounds": [1, 2, 3]}
                ],
            },
        },
    ]
    scope_metrics = [{"scope": {"name": "raw"}, "metrics": metrics}]
    return {"resourceMetrics": [{"resource": resource, "scopeMetrics": scope_metrics}]}


async def test_otlp_json_summary_and_refused_points_get_partial_success(service: Service) -> None:
    assert service.http is not None
    url = f"http://127.0.0.1:{service.http.port}/v1/metrics"
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json=_summary_and_bad_points("json-app")) as response:
            assert response.status == 200, await response.text()
            answer = json.loads(await response.text())
    partial = answer["partialSuccess"]
    assert int(partial["rejectedDataPoints"]) == 3
    message = partial["errorMessage"]
    assert "gauge.mixed" in message and "bad.histogram" in message and "bucket" in message

    summary = await rows(
        service,
        "SELECT MetricName, Count, Sum, ValueAtQuantiles.Quantile AS q, ValueAtQuantiles.Value AS v,"
        " toUnixTimestamp64Nano(TimeUnix) AS t FROM otel_metrics_summary WHERE ServiceName = 'json-app'",
    )
    assert len(summary) == 1
    assert (summary[0]["MetricName"], int(summary[0]["Count"]), float(summary[0]["Sum"])) == ("rpc.latency", 4, 10.0)
    assert [float(q) for q in summary[0]["q"]] == [0.5, 0.99] and [float(v) for v in summary[0]["v"]] == [2.0, 5.0]
    assert int(summary[0]["t"]) == 1700000060000000000
    gauge = await rows(service, "SELECT Value FROM otel_metrics_gauge WHERE ServiceName = 'json-app'")
    assert gauge == [{"Value": 1.5}]
    histograms = await rows(service, "SELECT count() AS n FROM otel_metrics_histogram WHERE ServiceName = 'json-app'")
    assert int(histograms[0]["n"]) == 0


@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_metrics_need_the_same_token_as_traces(service_config: Any, protocol: str) -> None:
    service_config.collector.auth_tokens = ["s3cret"]
    service = Service(service_config)
    await service.start()
    try:
        data = every_kind("guarded")
        wrong = metric_exporter(protocol, port(service, protocol), {"authorization": "Bearer nope"})
        assert await asyncio.to_thread(send, wrong, data) == "FAILURE"
        right = metric_exporter(protocol, port(service, protocol), {"authorization": "Bearer s3cret"})
        assert await asyncio.to_thread(send, right, data) == "SUCCESS"
        stored = await rows(service, "SELECT count() AS n FROM otel_metrics_sum WHERE ServiceName = 'guarded'")
        assert int(stored[0]["n"]) == 2
    finally:
        await service.shutdown()


@pytest.mark.parametrize("delta", [False, True], ids=["cumulative", "delta"])
async def test_genai_rollups_count_cumulative_points_once(service: Service, delta: bool) -> None:
    """Three exports of one app: the roll-up counts each call once, whatever the temporality.

    A cumulative histogram repeats every earlier call in each export; summing its points as if they were
    deltas would count the first call three times.
    """
    name = f"rollup-{'delta' if delta else 'cumulative'}"
    recorder = Recorder(name, delta=delta)
    for calls in (2, 1, 3):
        for _ in range(calls):
            recorder.call("gpt-4o", 100, 20, 0.5, agent="planner")
        recorder.call("claude-3", 7, 3, 2.0)
        assert await asyncio.to_thread(send, metric_exporter("http", port(service, "http")), recorder.collect()) == (
            "SUCCESS"
        )
    for grain in ("minute", "hour"):
        series = await rows(
            service,
            "SELECT Agent, Model, sum(Calls) AS calls, sum(InputTokens) AS input, sum(OutputTokens) AS output,"
            f" sum(DurationSum) AS seconds FROM genai_usage_{grain} WHERE ServiceName = '{name}'"
            " GROUP BY Agent, Model ORDER BY Agent, Model",
        )
        assert [
            (r["Agent"], r["Model"], int(r["calls"]), int(r["input"]), int(r["output"]), float(r["seconds"]))
            for r in series
        ] == [
            ("planner", "gpt-4o", 6, 600, 120, 3.0),
            (name, "claude-3", 3, 21, 9, 6.0),
        ], grain


async def test_dashboard_usage_panel_reads_the_rollups(service: Service) -> None:
    """The dashboard's usage endpoint: tokens and mean latency per agent and model, in the score charts' hours."""
    recorder = Recorder("panel-app")
    recorder.call("gpt-4o", 100, 20, 0.5, agent="planner")
    recorder.call("gpt-4o", 50, 10, 1.5, agent="planner")
    assert (
        await asyncio.to_thread(send, metric_exporter("grpc", port(service, "grpc")), recorder.collect()) == "SUCCESS"
    )
    assert service.api is not None
    answer = await asyncio.to_thread(api_json, service.api.port, "/api/v1/dashboard/usage?since=1h&by=hour")
    [point] = [p for p in answer["points"] if p["service_name"] == "panel-app"]
    assert (point["agent"], point["model"], point["calls"]) == ("planner", "gpt-4o", 2)
    assert (point["input_tokens"], point["output_tokens"], point["mean_duration_s"]) == (150, 30, 1.0)
    status, body = await asyncio.to_thread(
        api_call, service.api.port, "/api/v1/dashboard/usage?since=1h&rule=x", method="GET"
    )
    assert status == 400 and "since and by only" in body["error"]


def _duration_export(service_name: str, points: list[tuple[int, int, float]], cumulative: bool) -> dict[str, Any]:
    """One gen_ai.client.operation.duration point per (minute, count, sum), all of one series started at minute 0."""
    start = 1_700_000_040 * 10**9  # a whole minute
    model = {"key": "gen_ai.request.model", "value": {"stringValue": "m"}}
    data_points = [
        {
            "startTimeUnixNano": str(start),
            "timeUnixNano": str(start + minute * 60 * 10**9 + 30 * 10**9),
            "count": str(count),
            "sum": total,
            "attributes": [model],
        }
        for minute, count, total in points
    ]
    metric = {"name": DURATION, "unit": "s", "histogram": {"aggregationTemporality": 2 if cumulative else 1}}
    metric["histogram"]["dataPoints"] = data_points  # type: ignore[index]
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service_name}}]}
    return {"resourceMetrics": [{"resource": resource, "scopeMetrics": [{"metrics": [metric]}]}]}


@pytest.mark.parametrize("cumulative", [True, False], ids=["cumulative", "delta"])
async def test_genai_rollups_per_minute_across_minutes(service: Service, cumulative: bool) -> None:
    """Calls made in three minutes: 2, then 1, then 3. Cumulative points say 2, 3 and 6; each minute counts its own."""
    name = f"minutes-{cumulative}"
    points = [(0, 2, 1.0), (1, 3, 1.5), (2, 6, 4.5)] if cumulative else [(0, 2, 1.0), (1, 1, 0.5), (2, 3, 3.0)]
    assert service.http is not None
    async with aiohttp.ClientSession() as session:
        url = f"http://127.0.0.1:{service.http.port}/v1/metrics"
        async with session.post(url, json=_duration_export(name, points, cumulative)) as response:
            assert response.status == 200, await response.text()
    minutes = await rows(
        service,
        f"SELECT toUnixTimestamp(Bucket) - 1700000040 AS at, Calls, DurationSum FROM genai_usage_minute"
        f" WHERE ServiceName = '{name}' ORDER BY Bucket",
    )
    assert [(int(r["at"]), int(r["Calls"]), float(r["DurationSum"])) for r in minutes] == [
        (0, 2, 1.0),
        (60, 1, 0.5),
        (120, 3, 3.0),
    ]
    hours = await rows(service, f"SELECT sum(Calls) AS calls FROM genai_usage_hour WHERE ServiceName = '{name}'")
    assert int(hours[0]["calls"]) == 6


@pytest.mark.slow
async def test_usage_panel_in_headless_chromium(service_config: Any, tmp_path: Path) -> None:
    """The dashboard draws tokens and latency per agent and model from metrics sent by the real SDK."""
    playwright = pytest.importorskip("playwright.async_api", reason="playwright is in the test extra")
    chromium = chromium_path()
    if chromium is None:
        pytest.skip("no Chromium on this machine")
    service_config.api.auth_tokens = [TOKEN]
    service = Service(service_config)
    await service.start()
    try:
        recorder = Recorder("browser-app")
        recorder.call("gpt-4o", 100, 20, 0.5, agent="planner")
        recorder.call("claude-3", 7, 3, 2.0, agent="writer")
        exporter = metric_exporter("http", port(service, "http"))
        assert await asyncio.to_thread(send, exporter, recorder.collect()) == "SUCCESS"
        base = f"http://127.0.0.1:{service.api.port}" if service.api else ""
        async with playwright.async_playwright() as driver:
            browser = await driver.chromium.launch(executable_path=chromium, headless=True)
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 1400})
                watch = BrowserWatch(base)
                watch.attach(page)
                await page.goto(f"{base}/dashboard/#token={TOKEN}")
                await page.locator("#usage-table tbody", has_text="planner").wait_for(timeout=20_000)
                await page.screenshot(path=str(tmp_path / "usage.png"), full_page=True)
                rows = await page.locator("#usage-table tbody tr").all_inner_texts()
                assert any("planner" in r and "gpt-4o" in r and "100" in r and "0.500" in r for r in rows), rows
                assert any("writer" in r and "claude-3" in r and "2.000" in r for r in rows), rows
                for chart in ("usage-tokens-chart", "usage-latency-chart"):
                    assert await page.locator(f"#{chart} canvas").count() == 1, chart
                legend = await page.locator("#usage-tokens-chart .u-legend").inner_text()
                assert "planner · gpt-4o" in legend and "writer · claude-3" in legend
                assert watch.problems == []
            finally:
                await browser.close()
    finally:
        await service.shutdown()


async def test_metrics_acknowledged_during_a_storage_outage_are_stored_after_it(service_config: Any) -> None:
    """Spooled acknowledgement, as for spans: an OK while storage is down, and every point lands once it is back."""
    service_config.storage.acknowledge = "spooled"
    service = Service(service_config)
    await service.start()
    try:
        inserts = service.metric_writer.inserter.inserts
        real_insert, state = inserts.rows, {"down": True}

        async def insert(batch: Any) -> None:
            if state["down"]:
                raise RetryableError("storage unavailable (injected)")
            await real_insert.consume(batch)

        inserts.rows = Calling(insert)
        data = every_kind("outage-metrics")
        assert await asyncio.to_thread(send, metric_exporter("grpc", port(service, "grpc")), data) == "SUCCESS"
        assert service.metric_writer.stats.stored == 0
        state["down"] = False
        counts = (
            "SELECT (SELECT count() FROM otel_metrics_sum WHERE ServiceName = 'outage-metrics') AS sums,"
            " (SELECT count() FROM otel_metrics_histogram WHERE ServiceName = 'outage-metrics') AS histograms,"
            " (SELECT count() FROM otel_metrics_exponential_histogram WHERE ServiceName = 'outage-metrics') AS exp,"
            " (SELECT count() FROM otel_metrics_gauge WHERE ServiceName = 'outage-metrics') AS gauges"
        )
        wanted = {"sums": 2, "histograms": 3, "exp": 1, "gauges": 1}
        found: dict[str, int] = {}
        for _ in range(300):
            found = {key: int(value) for key, value in (await rows(service, counts))[0].items()}
            if found == wanted:
                break
            await asyncio.sleep(0.1)
        assert found == wanted
    finally:
        await service.shutdown()
