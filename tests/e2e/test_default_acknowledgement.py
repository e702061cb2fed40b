"""The default acknowledgement is ``spooled``: an OK after the fsync, spans queryable shortly after.

The default was chosen by measurement (docs/ack-modes.md): only ``spooled`` kept the acknowledgement p99
under 50 ms at half the sustained rate. Without a spool the default is ``stored``; asking for ``spooled``
without one is a config error that names the key.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from spanscore.config import ServiceConfig, load_config
from spanscore.errors import ConfigError
from spanscore.server.service import Service
from tests.conftest import write_config
from tests.e2e.otlp_clients import export, grpc_exporter, record_agent_trace


def test_the_default_is_spooled_and_stored_without_a_spool(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert load_config(None, environ={}).storage.acknowledge == "spooled"
    no_spool = write_config(tmp_path, "storage: {spool_max_bytes: 0}\n")
    assert load_config(str(no_spool), environ={}).storage.acknowledge == "stored"
    asked = write_config(tmp_path, "storage: {spool_max_bytes: 0, acknowledge: spooled}\n")
    with pytest.raises(ConfigError, match="acknowledge: spooled needs the spool"):
        load_config(str(asked), environ={})


async def test_spans_acknowledged_from_the_spool_become_queryable(service_config: ServiceConfig) -> None:
    service_config.storage.acknowledge = "spooled"  # the fixture pins "stored" for the tests that read back at once
    service = Service(service_config)
    await service.start()
    try:
        spans = record_agent_trace("default-ack")
        assert await asyncio.to_thread(export, grpc_exporter(service.grpc.port), spans) == "SUCCESS"
        wanted = {f"{span.get_span_context().span_id:016x}" for span in spans}
        deadline = time.monotonic() + 10 * max(service_config.storage.insert_interval_s, 0.5)
        found: set[str] = set()
        while time.monotonic() < deadline and found != wanted:
            rows = await asyncio.to_thread(
                service.store.internal_query, "SELECT SpanId FROM otel_traces WHERE ServiceName = 'default-ack'"
            )
            found = {row[0] for row in rows}
            await asyncio.sleep(0.05)
        assert found == wanted
        assert service.span_writer.stats.stored == len(spans) and service.span_writer.stats.spooled == 0
    finally:
        await service.shutdown()
