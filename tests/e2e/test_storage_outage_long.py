"""A 30 s storage outage caused by a real engine error, while the real OTel SDK exporters keep sending.

Why a full disk: no ClickHouse server can run on the build machines (docs: DESIGN), so a proxy in front of
a server cannot be stopped and started here. What can be made to fail for real is the embedded engine: the
test puts chDB's data directory on a small tmpfs of its own and fills that tmpfs until less free space is left
than the store's floor (``storage.min_free_disk_bytes``). Every insert then fails inside the engine
(NOT_ENOUGH_SPACE), through the same client call and error handling a failing server goes through; nothing in
spanscore is patched. Freeing the space ends the outage. The spool lives on another disk, as it would in
production.

The balloon leaves room under the floor, as the floor leaves room on a real disk: filling the tmpfs to the
last byte made a merge that was running commit a part with an empty marks file, and every later read of
otel_traces failed with CORRUPTED_DATA (seen once in CI). That is the failure the floor exists to prevent.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from spanscore.storage.write.spool_log import waiting_batches
from tests.e2e.api_client import api_json
from tests.e2e.otlp_clients import grpc_exporter, http_exporter
from tests.e2e.reliability_figures import record_figures
from tests.e2e.test_process import _free_port, _start

OUTAGE_S = 30.0
DISK_BYTES = 64 << 20
FLOOR_BYTES = 24 << 20  # storage.min_free_disk_bytes: inserts stop below it
LEFT_FREE_BYTES = 8 << 20  # what the balloon leaves: under the floor, room for merges


class _Recording(SpanExporter):
    """Wraps a real OTLP exporter and remembers the (trace id, span id) of every span it got an OK for."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.acknowledged: list[tuple[str, str]] = []
        self.failed = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        ids = [(f"{s.get_span_context().trace_id:032x}", f"{s.get_span_context().span_id:016x}") for s in spans]
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.acknowledged.extend(ids)
            else:
                self.failed += len(ids)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class _Agents:
    """Two instrumented 'agents' (gRPC and HTTP exporters, batching as the SDK does) emitting traces steadily."""

    def __init__(self, grpc_port: int, http_port: int) -> None:
        self.exporters = {"grpc": _Recording(grpc_exporter(grpc_port)), "http": _Recording(http_exporter(http_port))}
        self.providers = {}
        for name, exporter in self.exporters.items():
            provider = TracerProvider(resource=Resource.create({"service.name": f"outage-{name}"}))
            provider.add_span_processor(
                BatchSpanProcessor(exporter, schedule_delay_millis=200, max_export_batch_size=64)
            )
            self.providers[name] = provider
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def acknowledged(self) -> int:
        return sum(len(e.acknowledged) for e in self.exporters.values())

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        tracers = [p.get_tracer("outage-test") for p in self.providers.values()]
        for _ in range(4000):  # bounded: at most 4000 x 2 traces of 2 spans, about 25 ms apart
            if self._stop.wait(0.025):
                return
            for tracer in tracers:
                with tracer.start_as_current_span("invoke_agent support") as root:
                    root.set_attribute("gen_ai.operation.name", "invoke_agent")
                    with tracer.start_as_current_span("chat gpt-4o-mini") as child:
                        child.set_attribute("gen_ai.usage.input_tokens", 120)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        for provider in self.providers.values():
            provider.shutdown()  # flushes what the batch processors still hold (exports with retries)


def _wait_status(port: int, done: Any, wait_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + wait_s
    status = api_json(port, "/api/v1/status")
    while not done(status) and time.monotonic() < deadline:
        time.sleep(0.2)
        status = api_json(port, "/api/v1/status")
    return dict(status)


def _free_bytes(disk: Path) -> int:
    stat = os.statvfs(disk)
    return stat.f_bavail * stat.f_frsize


def _fill(disk: Path) -> Path:
    """Write a file until the filesystem has ``LEFT_FREE_BYTES`` free; return it (deleting it ends the outage)."""
    balloon = disk / "balloon"
    chunk = b"\0" * (1 << 20)
    with open(balloon, "wb", buffering=0) as handle:
        for _ in range(DISK_BYTES // len(chunk) + 8):  # bounded by the disk's size
            if _free_bytes(disk) <= LEFT_FREE_BYTES:
                break
            handle.write(chunk)
        else:
            raise AssertionError("the small disk never filled up")
    assert _free_bytes(disk) < FLOOR_BYTES, "the balloon left more room than the store's floor"
    return balloon


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("needs mount(8) to give the engine a small disk of its own")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES},mode=0755", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        if subprocess.run(["umount", str(disk)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)


@pytest.mark.slow
@pytest.mark.timeout(480)  # the outage, then up to 180 s of replay on a loaded machine, then the drain at stop
@pytest.mark.reliability("no-acknowledged-span-lost")
def test_thirty_second_storage_outage_loses_and_duplicates_nothing_acknowledged(
    tmp_path: Path, small_disk: Path
) -> None:
    """Storage unavailable for 30 s (the engine's disk is full) under steady OTel SDK traffic: all replayed once.

    A `spanscore serve` process stores into chDB on a 64 MB tmpfs; two OTel SDK tracer providers (batching
    gRPC and HTTP exporters) send small agent traces every 25 ms throughout. After 5 s the tmpfs is filled
    up, which makes every insert fail inside the engine; 30 s later the space is freed. Checks: the outage was
    real (insert failures counted, batches spooled), exports were still acknowledged during it, and afterwards
    every acknowledged span is in otel_traces exactly once, with the spool fully replayed.
    """
    grpc_port, http_port, api_port = _free_port(), _free_port(), _free_port()
    config = tmp_path / "spanscore.yaml"
    config.write_text(
        f"collector:\n  grpc: {{port: {grpc_port}}}\n  http: {{port: {http_port}}}\napi: {{port: {api_port}}}\n"
        f"storage:\n  dsn: chdb://{(small_disk / 'data').as_posix()}\n"
        f"  spool_dir: {(tmp_path / 'spool').as_posix()}\n  flush_interval_s: 0.05\n"
        f"  min_free_disk_bytes: {FLOOR_BYTES}\n"
        "  acknowledge: stored\n"  # the OK waits for the failing insert, which then spools: the path under test
        "log_level: WARNING\n",
        encoding="utf-8",
    )
    process = _start(config)
    agents = _Agents(grpc_port, http_port)
    balloon: Path | None = None
    try:
        agents.start()
        time.sleep(5)
        before_outage = agents.acknowledged()
        balloon = _fill(small_disk)
        outage_started = time.monotonic()
        failing = _wait_status(api_port, lambda s: s["storage_insert_failures"] > 0, 20)
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - outage_started)))
        during = api_json(api_port, "/api/v1/status")
        acknowledged_during_outage = agents.acknowledged() - before_outage
        balloon.unlink()
        balloon = None
        time.sleep(5)
        agents.stop()
        # Bounded, but wide: on a loaded machine (CI beside benchmark runs, load 10) 90 s was not enough for the replay,
        # and the check below counted spans still in the spool as lost. Not drained in time is its own failure.
        final = _wait_status(
            api_port, lambda s: s["spans_pending"] == 0 and s["spans_replayed"] == s["spans_spooled"], 180
        )
        drained = final["spans_pending"] == 0 and final["spans_replayed"] == final["spans_spooled"]
        assert drained, f"the spool was not replayed within 180 s: {final}"
        sql = (
            "SELECT TraceId, SpanId, count() AS copies FROM otel_traces "
            "WHERE ServiceName IN ('outage-grpc', 'outage-http') GROUP BY TraceId, SpanId"
        )
        rows = api_json(api_port, "/api/v1/query", {"sql": sql, "format": "json"}, busy_wait_s=60)["data"]
    finally:
        if balloon is not None:
            balloon.unlink()
        agents.stop()
        process.send_signal(signal.SIGTERM)
        exit_code = process.wait(timeout=120)

    stored = {(row["TraceId"], row["SpanId"]): int(row["copies"]) for row in rows}
    acknowledged = [pair for e in agents.exporters.values() for pair in e.acknowledged]
    figures = {
        "outage_s": OUTAGE_S,
        "fault": (
            "chDB data directory on a 64 MB tmpfs filled to 8 MB free, under the 24 MB floor "
            "(inserts fail in the engine)"
        ),
        "spans_acknowledged": len(acknowledged),
        "spans_acknowledged_during_outage": acknowledged_during_outage,
        "spans_not_acknowledged": sum(e.failed for e in agents.exporters.values()),
        "spans_stored": sum(stored.values()),
        "spans_lost": len(set(acknowledged) - set(stored)),
        "spans_duplicated": sum(copies - 1 for copies in stored.values()),
        "failed_inserts": final["storage_insert_failures"],
        "spans_spooled": final["spans_spooled"],
        "spans_replayed": final["spans_replayed"],
    }
    record_figures("storage_outage_30s", figures)
    print(json.dumps(figures, indent=1))

    assert exit_code == 0
    assert failing["storage_insert_failures"] > 0, "filling the disk did not make inserts fail"
    assert during["spans_spooled"] > 0 and acknowledged_during_outage > 0, figures
    assert len(acknowledged) == len(set(acknowledged))
    assert set(acknowledged) <= set(stored), figures
    assert final["spans_replayed"] == final["spans_spooled"] and final["spans_pending"] == 0, final
    assert waiting_batches(tmp_path / "spool" / "spans") == 0, "spooled batches left behind"
    # A partly failed insert (rows in otel_traces, the trace-id view not) is retried as the same block,
    # and the tables' deduplication windows (migration 0006) keep one copy.
    assert all(stored[pair] == 1 for pair in acknowledged), figures
