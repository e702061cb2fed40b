"""`spanscore serve` as a real process: SIGTERM drains, `spanscore query` works while it runs and after."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.e2e.otlp_clients import grpc_exporter, record_agent_trace
from tests.ports import free_port


def _free_port() -> int:
    return free_port()  # below the ephemeral range: no outgoing connection takes it before the bind


def _start(config: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "spanscore.cli.commands", "serve", "-c", str(config)],
        cwd=config.parent,  # the data directory defaults to ./spanscore-data: keep it in the test's directory
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    assert process.stdout is not None
    said: list[str] = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if "spanscore serving" in line:
            threading.Thread(target=process.stdout.read, daemon=True).start()  # keep the pipe drained
            return process
        said.append(line)
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError(f"service did not start (exit {process.poll()}): {''.join(said)[-3000:]}")


def _query(config: Path, sql: str, fmt: str = "csv") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spanscore.cli.commands", "query", "-c", str(config), "--format", fmt, sql],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "spanscore.yaml"
    path.write_text(
        f"collector:\n  grpc: {{port: {_free_port()}}}\n  http: {{port: {_free_port()}}}\n"
        f"api: {{port: {_free_port()}}}\nstorage: {{flush_interval_s: 0.2}}\n",
        encoding="utf-8",
    )
    return path


def _grpc_port(config: Path) -> int:
    import yaml

    return int(yaml.safe_load(config.read_text())["collector"]["grpc"]["port"])


class _Stream:
    """Exports small traces in a thread until stopped or refused, remembering every acknowledged span id."""

    def __init__(self, port: int, service_name: str) -> None:
        self.acknowledged: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(port, service_name))
        self._thread.start()

    def _run(self, port: int, service_name: str) -> None:
        exporter = grpc_exporter(port)
        for _ in range(2000):  # bounded: at most 2000 exports of 2 spans
            if self._stop.is_set():
                break
            spans = record_agent_trace(service_name)
            if exporter.export(spans) != SpanExportResult.SUCCESS:
                break
            self.acknowledged.update(f"{s.get_span_context().span_id:016x}" for s in spans)

    def wait_for(self, count: int, wait_s: float = 30.0) -> None:
        deadline = time.monotonic() + wait_s
        while len(self.acknowledged) < count and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=120)


def _stored_span_ids(config: Path, service_name: str) -> set[str]:
    result = _query(config, f"SELECT SpanId FROM otel_traces WHERE ServiceName = '{service_name}'")
    assert result.returncode == 0, result.stderr
    return set(result.stdout.replace('"', "").split()[1:])


@pytest.mark.slow
def test_sigterm_during_stream_keeps_every_acknowledged_span(config_file: Path) -> None:
    process = _start(config_file)
    stream = _Stream(_grpc_port(config_file), "sigterm")
    stream.wait_for(100)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    stream.stop()
    assert len(stream.acknowledged) >= 100
    # Nothing is running now: the query opens the store directly.
    assert stream.acknowledged <= _stored_span_ids(config_file, "sigterm")


@pytest.mark.slow
def test_query_against_a_service_on_other_ports_says_so(config_file: Path) -> None:
    """The CLI finds no API where it looks, and the store is held by the service: it says which, not a lock error."""
    process = _start(config_file)
    try:
        elsewhere = subprocess.run(
            [sys.executable, "-m", "spanscore.cli.commands", "query", "SELECT 1"],
            cwd=config_file.parent,  # the service's data directory, but not its config (so not its API port)
            env={**os.environ, "SPANSCORE_API__PORT": str(_free_port())},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert elsewhere.returncode == 1
        assert "open in another process" in elsewhere.stderr and "SPANSCORE_API__PORT" in elsewhere.stderr, (
            elsewhere.stderr
        )
        assert "Traceback" not in elsewhere.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0


def test_query_cli_goes_through_the_running_service(config_file: Path) -> None:
    process = _start(config_file)
    try:
        exporter = grpc_exporter(_grpc_port(config_file))
        assert exporter.export(record_agent_trace("cli")) == SpanExportResult.SUCCESS
        table = _query(config_file, "SELECT count() AS spans FROM otel_traces", fmt="table")
        assert table.returncode == 0, table.stderr
        assert "spans" in table.stdout and "2" in table.stdout
        api_port = yaml.safe_load(config_file.read_text(encoding="utf-8"))["api"]["port"]
        assert f"(1 row, from the service at http://127.0.0.1:{api_port})" in table.stdout, table.stdout
        refused = _query(config_file, "DROP TABLE otel_traces")
        assert refused.returncode == 1
        assert "only read queries" in refused.stderr
        still = _query(config_file, "SELECT count() FROM otel_traces", fmt="json")
        assert '"2"' in still.stdout or ": 2" in still.stdout
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0


def test_bad_config_fails_fast_naming_key_and_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("storage:\n  batch_max_spans: -3\n  dsn: mysql://x\ncollector:\n  grpcc: {}\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "spanscore.cli.commands", "serve", "-c", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    assert result.returncode == 2
    assert str(path) in result.stderr
    assert "storage.batch_max_spans" in result.stderr
    assert "storage.dsn" in result.stderr
    assert "collector.grpcc: unknown key" in result.stderr


@pytest.mark.slow
def test_kill_9_mid_stream_loses_no_acknowledged_span(config_file: Path) -> None:
    process = _start(config_file)
    stream = _Stream(_grpc_port(config_file), "kill9")
    stream.wait_for(100)
    process.kill()  # SIGKILL: no drain, no flush
    process.wait(timeout=60)
    stream.stop()
    assert len(stream.acknowledged) >= 100
    restarted = _start(config_file)  # the store must open cleanly after the crash
    try:
        assert stream.acknowledged <= _stored_span_ids(config_file, "kill9")
    finally:
        restarted.send_signal(signal.SIGTERM)
        assert restarted.wait(timeout=60) == 0
