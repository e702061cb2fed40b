"""Issue #37, item 1: on OTLP/gRPC, authentication comes before cost, and concurrent calls are capped.

Against a real `spanscore serve` with ingest tokens. Before, grpcio read every whole message before the
handler checked the token: eight concurrent unauthenticated 48 MiB exports all got UNAUTHENTICATED, yet the
service grew by about 700 MB. The figures are bench/grpc_admission.py's; these bounds are generous.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
from opentelemetry.sdk.trace.export import SpanExportResult

from bench.grpc_admission import log_export, trace_export
from tests.e2e.otlp_clients import grpc_exporter, record_agent_trace
from tests.e2e.served_memory import TOKEN, serve

MIB = 1 << 20
TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"


async def _call(port: int, method: str, body: bytes, token: str | None) -> grpc.StatusCode:
    """One raw export on a connection of its own; the status it ended with."""
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            await channel.unary_unary(method)(body, metadata=metadata, timeout=120)
        except grpc.aio.AioRpcError as error:
            return error.code()
        return grpc.StatusCode.OK


async def _concurrently(port: int, calls: list[tuple[str, bytes]], token: str | None) -> list[grpc.StatusCode]:
    return list(await asyncio.gather(*(_call(port, method, body, token) for method, body in calls)))


@pytest.mark.reliability("keep-strangers-out")
def test_unauthenticated_exports_cost_nothing_before_they_are_refused(tmp_path: Path) -> None:
    """Eight concurrent unauthenticated 48 MiB exports (traces and logs): all UNAUTHENTICATED, little growth."""
    traces, logs = trace_export(48 * MIB), log_export(48 * MIB)
    calls = [(TRACES, traces)] * 4 + [(LOGS, logs)] * 4
    with serve(tmp_path) as served:
        with served.measure() as peak:
            statuses = asyncio.run(_concurrently(served.grpc_port, calls, token=None))
        assert statuses == [grpc.StatusCode.UNAUTHENTICATED] * 8
        assert peak.growth_mib < 150, f"the service grew by {peak.growth_mib:.0f} MiB for refused calls"
        # The real SDK exporter: refused without the token, stored with it.
        assert grpc_exporter(served.grpc_port).export(record_agent_trace()) == SpanExportResult.FAILURE
        exporter = grpc_exporter(served.grpc_port, headers={"authorization": f"Bearer {TOKEN}"})
        try:
            assert exporter.export(record_agent_trace()) == SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()


@pytest.mark.reliability("bounded-memory-backpressure")
def test_calls_beyond_the_cap_are_refused_at_once_and_the_rest_read_one_at_a_time(tmp_path: Path) -> None:
    """Eight concurrent 24 MiB exports with the token, at most 3 calls and 1 read at once.

    Calls beyond ``max_concurrent_calls`` get RESOURCE_EXHAUSTED (which OTLP exporters retry) without being read;
    the others are stored, read one at a time. Before, nothing capped calls: all eight were read at once.
    """
    calls = [(TRACES, trace_export(24 * MIB, span)) for span in range(1, 9)]
    with serve(tmp_path, grpc_options="max_concurrent_reads: 1, max_concurrent_calls: 3") as served:
        with served.measure() as peak:
            statuses = asyncio.run(_concurrently(served.grpc_port, calls, token=TOKEN))
    assert grpc.StatusCode.RESOURCE_EXHAUSTED in statuses, statuses
    assert set(statuses) == {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}, statuses
    assert peak.growth_mib < 400, f"eight 24 MiB exports grew the service by {peak.growth_mib:.0f} MiB"


def test_the_caps_are_configuration(tmp_path: Path) -> None:
    """A cap below one is refused at start, naming the key."""
    import subprocess
    import sys

    config = tmp_path / "spanscore.yaml"
    config.write_text("collector:\n  grpc: {max_concurrent_reads: 0}\n", encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "spanscore.cli.commands", "config", "check", "-c", str(config)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert checked.returncode != 0
    assert "max_concurrent_reads" in checked.stdout + checked.stderr
