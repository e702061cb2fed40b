"""Start ``spanscore serve`` as a separate process on free loopback ports, watch it, stop it.

Each benchmark case gets a fresh service with its own temporary config and
embedded store, so peak RSS and row counts belong to that case alone.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

import yaml

HANG_TIMEOUT_S = 300.0
"""How long the suite waits for an answer the service owes (start-up, an export, a query, a CLI call, a probe's
first sample) before it calls the service hung and stops. Generous on purpose: on a loaded machine a slow answer
is a figure to report, not an error; only a hang may fail the suite (and the CI smoke test that runs it)."""
START_TIMEOUT_S = HANG_TIMEOUT_S
STOP_TIMEOUT_S = 40.0
"""After this, a service that has not drained and exited on SIGTERM is killed (not an error for the suite)."""


def more_samples(begun: float, window_s: float, timed: int) -> bool:
    """Whether a probe loop begun at ``begun`` (``time.monotonic()``) sends another sample.

    Within its window, yes; past it, only while nothing has been timed yet and the service does not count as
    hung, so a short window on a loaded machine still yields a figure instead of failing the suite.
    """
    elapsed = time.monotonic() - begun
    return elapsed < window_s or (timed == 0 and elapsed < HANG_TIMEOUT_S)


def free_port() -> int:
    """A port below the ephemeral range (``tests.ports``): no outgoing connection takes it before the bind."""
    from tests.ports import free_port as pick

    return pick()


def spanscore_executable() -> str:
    candidate = Path(sys.executable).parent / "spanscore"
    return str(candidate) if candidate.exists() else "spanscore"


class _ExitedEarlyError(RuntimeError):
    """The service stopped during start-up (most often: a probed port was taken meanwhile)."""


class ServiceProcess:
    """A running ``spanscore serve -c <tmp config>``; use as a context manager."""

    def __init__(
        self, workdir: Path, extra: dict[str, object] | None = None, *, env: dict[str, str] | None = None
    ) -> None:
        self.workdir = workdir
        self.extra = extra or {}
        self.env = env
        """Variables added to the service's environment (``bench.ack_modes --before`` sets PYTHONPATH)."""
        self.config_path = workdir / "spanscore.yaml"
        self.log_path = workdir / "service.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.start_seconds = 0.0
        self._write_config()

    def _write_config(self) -> None:
        """Fresh free ports each time: another process may take a probed port before the service binds it."""
        self.grpc_port = free_port()
        self.http_port = free_port()
        self.api_port = free_port()
        config: dict[str, object] = {
            "collector": {"grpc": {"port": self.grpc_port}, "http": {"port": self.http_port}},
            "api": {"port": self.api_port},
            # "stored" unless a case says otherwise: the figures in docs/benchmarks.md were taken that way, and
            # cases compare the modes by setting storage.acknowledge themselves.
            "storage": {
                "dsn": f"chdb:///{(self.workdir / 'data').resolve().as_posix().lstrip('/')}",
                "acknowledge": "stored",
            },
            "log_level": "WARNING",
            # An explicit empty list: without a rules: key, serve loads its default rule and scores every run,
            # which would measure scoring, not ingest. Cases that score pass their own rules.
            "rules": [],
        }
        self.config_path.write_text(yaml.safe_dump(_merged(config, self.extra)))

    def __enter__(self) -> ServiceProcess:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self, attempts: int = 3) -> None:
        for attempt in range(1, attempts + 1):
            try:
                self._start_once()
                return
            except _ExitedEarlyError:
                if attempt == attempts:
                    raise
                self._write_config()

    def _start_once(self) -> None:
        started = time.perf_counter()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [spanscore_executable(), "serve", "-c", str(self.config_path)],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=None if self.env is None else {**os.environ, **self.env},
            )
        deadline = started + START_TIMEOUT_S
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise _ExitedEarlyError(f"spanscore serve exited with {self.process.returncode}: {self.log_tail()}")
            if self._healthy() and self._listening(self.grpc_port) and self._listening(self.http_port):
                self.start_seconds = time.perf_counter() - started
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"spanscore serve did not become healthy in {START_TIMEOUT_S:.0f} s: {self.log_tail()}")

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.api_port}/healthz", timeout=1) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    @staticmethod
    def _listening(port: int) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    def log_tail(self, limit: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""

    def peak_rss_bytes(self) -> int:
        """VmHWM of the service process (Linux); 0 when unavailable."""
        if self.process is None:
            return 0
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return 0
        return 0

    def cpu_seconds(self) -> float:
        """User + system CPU time of the service so far (Linux); 0 when unavailable."""
        if self.process is None:
            return 0.0
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def query(self, sql: str) -> list[dict[str, object]]:
        """Run a read query through the API (JSON) and return its rows."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.api_port}/api/v1/query",
            data=json.dumps({"sql": sql, "format": "json"}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=HANG_TIMEOUT_S) as response:
            rows: list[dict[str, object]] = json.loads(response.read())["data"]
            return rows

    def stored_spans_cli(self) -> int:
        """``spanscore query -c cfg --format csv "SELECT count() FROM otel_traces"``, as a user would run it."""
        result = subprocess.run(
            [
                spanscore_executable(),
                "query",
                "-c",
                str(self.config_path),
                "--format",
                "csv",
                "SELECT count() FROM otel_traces",
            ],
            capture_output=True,
            timeout=HANG_TIMEOUT_S,
            check=True,
        )
        lines = [line for line in result.stdout.decode().splitlines() if line.strip()]
        return int(lines[-1].strip().strip('"'))

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=HANG_TIMEOUT_S)


def _merged(base: dict[str, object], extra: dict[str, object]) -> dict[str, object]:
    """``extra`` over ``base``, mapping into mapping at every depth, so extra keys keep the ports and the dsn."""
    out = dict(base)
    for key, value in extra.items():
        current = out.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            out[key] = _merged(current, value)
        else:
            out[key] = value
    return out


def temp_workdir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix=f"spanscore-bench-{prefix}-")
