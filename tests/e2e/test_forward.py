"""Forwarding: scores and pass-through spans reach another OTLP backend with the scored span's ids.

The "existing backend" here is a second spanscore instance: a real OTLP receiver on loopback whose
storage the test can read.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from spanscore.config import ServiceConfig
from spanscore.export.forward import ForwardConfig
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import export, grpc_exporter
from tests.e2e.test_live_scoring import agent_traces
from tests.service_setup import new_database_name


async def _poll(service: Service, sql: str, expected: int, wait_s: float = 30.0) -> list[tuple]:  # type: ignore[type-arg]
    deadline = time.monotonic() + wait_s
    while True:
        rows = await asyncio.to_thread(service.store.internal_query, sql)
        if len(rows) >= expected or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(0.2)


@pytest.mark.parametrize(("protocol", "mode"), [("http/protobuf", "log"), ("grpc", "span")])
async def test_scores_and_spans_are_forwarded(service_config: ServiceConfig, protocol: str, mode: str) -> None:
    backend_config = service_config.model_copy(deep=True)
    backend_config.storage.database = new_database_name()
    backend_config.storage.spool_dir = f"{service_config.storage.spool_dir}-backend"  # one writer per spool
    backend = Service(backend_config)
    await backend.start()
    try:
        endpoint = (
            f"http://127.0.0.1:{backend.http.port}" if protocol == "http/protobuf" else f"127.0.0.1:{backend.grpc.port}"
        )
        service_config.forward = ForwardConfig(endpoint=endpoint, protocol=protocol, scores=mode, spans=True)
        service_config.collector.runs = service_config.collector.runs.model_copy(update={"quiet_period_s": 0.2})
        service_config.scoring.poll_interval_s = 0.05
        service_config.rules = [RuleConfig.model_validate({"name": "fwd", "scorers": ["completeness"]})]
        service = Service(service_config)
        await service.start()
        try:
            spans = agent_traces(1)
            assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
            root = next(s for s in spans if s.name.startswith("invoke_agent")).get_span_context()
            trace_id, span_id = f"{root.trace_id:032x}", f"{root.span_id:016x}"
            assert await _poll(service, "SELECT 1 FROM scores", 1)
        finally:
            await service.shutdown()  # flushes the exporters

        passed = await _poll(backend, f"SELECT SpanId FROM otel_traces WHERE TraceId = '{trace_id}'", 2)
        assert {f"{s.get_span_context().span_id:016x}" for s in spans} <= {r[0] for r in passed}
        if mode == "log":
            rows = await _poll(
                backend,
                "SELECT TraceId, SpanId, LogAttributes['gen_ai.evaluation.name'], EventName FROM otel_logs",
                1,
            )
            assert rows and rows[0][:3] == (trace_id, span_id, "completeness")
            assert rows[0][3] == "gen_ai.evaluation.result"
        else:
            rows = await _poll(
                backend,
                "SELECT ParentSpanId, Events.Name, Events.Attributes FROM otel_traces"
                " WHERE SpanName = 'evaluation completeness'",
                1,
            )
            assert rows and rows[0][0] == span_id
            assert list(rows[0][1]) == ["gen_ai.evaluation.result"]
            assert rows[0][2][0]["gen_ai.evaluation.name"] == "completeness"
            assert rows[0][2][0]["spanscore.internal"] == "true"
        # spanscore's own results arriving at another spanscore are not stored there as outside scores
        outside = "SELECT count() FROM scores WHERE Source = 'otlp'"
        assert (await asyncio.to_thread(backend.store.internal_query, outside))[0][0] == 0
    finally:
        await backend.shutdown()
