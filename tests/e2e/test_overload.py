"""Overload: a real `spanscore serve` offered twice what it absorbs stays bounded and says "retry later" properly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_client import api_json
from tests.e2e.reliability_figures import ENVIRONMENT_VARIABLE as FIGURES_VARIABLE
from tests.e2e.reliability_figures import record_figures
from tests.e2e.test_process import _free_port, _start

REPO = Path(__file__).resolve().parents[2]

# The test runs with a much smaller pending-span bound than the default (200,000): ten requests' worth.
# The load process shares the 2 cores with the service and cannot always offer a full 2x of what the
# service absorbs; with this bound, both protocols reach it within seconds even at 1x, so backpressure is
# exercised on every run. What is checked is that the bound holds, whatever its value.
MAX_PENDING_SPANS = 2_000
SPANS_PER_REQUEST = 200
# Peak RSS of the service may exceed its RSS after start-up by at most this much. The pending bound holds
# about 2,000 decoded spans (a few MB); the rest is in-flight request bodies being decoded before
# they can be refused (at most the generator's 1000 in flight, about 20 MB of protobuf, several times that
# decoded), the chDB insert of one batch, and allocator slack. Queuing everything offered instead of
# refusing it (about 2x the absorbed rate for 30 s, half a million spans or more) grows far past it.
RSS_GROWTH_BOUND_MB = 600
# The default rule scores every run, and under this overload scoring falls behind: run assembly then fills to its
# byte bound, which the test sets to 32 MiB for the same reason as the pending bound. At the default (256 MiB,
# since session 32 counted as Python holds it), with the ready line's and the evicted runs' 128 MiB each, a
# scoring overload alone may take more than this test's bound: docs/sampling.md states what the defaults hold.
RUN_ASSEMBLY_BYTES = 32 << 20


def overload_seconds() -> float:
    """60 s when the figures are recorded for docs/reliability.md; 30 s otherwise (the bound is reached in seconds,
    and the whole suite must fit in 25 minutes on 2 cores)."""
    return 60.0 if os.environ.get(FIGURES_VARIABLE) else 30.0


class _RssSampler:
    """Samples the service's resident set size from /proc every 50 ms until stopped."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples_mb: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def read(self, field: str = "VmRSS") -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
        raise AssertionError(f"no {field} in /proc/{self.pid}/status")

    def __enter__(self) -> _RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            try:
                self.samples_mb.append(self.read())
            except (OSError, AssertionError):
                return


def _wait_drained(api_port: int, wait_s: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + wait_s
    status = api_json(api_port, "/api/v1/status")
    while status.get("spans_pending", 0) and time.monotonic() < deadline:
        time.sleep(0.2)
        status = api_json(api_port, "/api/v1/status")
    return dict(status)


def _stored_requests(api_port: int) -> dict[int, int]:
    """Spans stored per request sequence number (the first 8 bytes of every trace id of a request)."""
    sql = "SELECT substring(TraceId, 1, 16) AS request, count() AS spans FROM otel_traces GROUP BY request"
    rows = api_json(api_port, "/api/v1/query", {"sql": sql, "format": "json"}, busy_wait_s=60)["data"]
    return {int(row["request"], 16) - 1: int(row["spans"]) for row in rows}


@pytest.fixture
def overload_config(tmp_path: Path) -> Path:
    path = tmp_path / "spanscore.yaml"
    path.write_text(
        f"collector:\n  grpc: {{port: {_free_port()}}}\n  http: {{port: {_free_port()}}}\n"
        f"  runs: {{max_pending_bytes: {RUN_ASSEMBLY_BYTES}}}\n"
        f"api: {{port: {_free_port()}}}\n"
        # OK = stored, so the stored rows can be compared with the acknowledged requests once it has stopped.
        f"storage: {{max_pending_spans: {MAX_PENDING_SPANS}, acknowledge: stored}}\nlog_level: WARNING\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.slow
@pytest.mark.reliability("bounded-memory-backpressure")
def test_twice_the_absorbable_rate_stays_bounded_and_loses_nothing_acknowledged(overload_config: Path) -> None:
    """2x overload of a `spanscore serve` process over gRPC and HTTP: bounded RSS, backpressure with hints, no loss.

    A separate generator process warms up (3 s), measures what the service absorbs (closed loop, 100 requests
    of 200 small spans in flight, 4 s), then offers twice that for ``overload_seconds()`` (open loop re-aimed
    every second at twice what was acknowledged lately; pre-encoded requests alternating gRPC over 8 channels and
    HTTP, at most 1000 in flight). Checks: the service's peak RSS grows by at most RSS_GROWTH_BOUND_MB
    over its RSS after start-up; both protocols saw backpressure, every refusal was gRPC UNAVAILABLE /
    RESOURCE_EXHAUSTED with a RetryInfo trailer or HTTP 429 / 503 with Retry-After, and no request got any
    other answer; the stored rows are exactly the acknowledged requests, each stored once and whole.
    """
    import yaml

    ports = yaml.safe_load(overload_config.read_text())
    api_port = int(ports["api"]["port"])
    process = _start(overload_config)
    try:
        with _RssSampler(process.pid) as rss:
            started_mb = rss.read()
            spec = {
                "grpc_port": int(ports["collector"]["grpc"]["port"]),
                "http_port": int(ports["collector"]["http"]["port"]),
                "spans_per_request": SPANS_PER_REQUEST,
                "overload_s": overload_seconds(),
            }
            generator = subprocess.run(
                [sys.executable, "-m", "tests.e2e.overload_load", json.dumps(spec)],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=360,
            )
            assert generator.returncode == 0, generator.stderr[-3000:]
            result = json.loads(generator.stdout)
            status = _wait_drained(api_port)
        peak_mb = max([*rss.samples_mb, rss.read("VmHWM")])
        stored = _stored_requests(api_port)
    finally:
        process.send_signal(signal.SIGTERM)
        exit_code = process.wait(timeout=120)

    phases = result["phases"]
    overload = phases["overload"]
    acked = {sequence for phase in phases.values() for sequence in phase["acked"]}
    requests = sum(phase["requests"] for phase in phases.values())
    refusals: Counter[str] = Counter()
    without_hint: Counter[str] = Counter()
    other: Counter[str] = Counter()
    for phase in phases.values():
        refusals.update(phase["backpressure"])
        without_hint.update(phase["backpressure_without_hint"])
        other.update(phase["other"])
    figures = {
        "absorbed_spans_per_s": round(result["absorbed_spans_per_s"]),
        "offered_spans_per_s": round(overload["offered_spans_per_s"]),
        "offered_factor_vs_calibration": round(overload["offered_spans_per_s"] / result["absorbed_spans_per_s"], 2),
        "overload_share_acknowledged": round(len(overload["acked"]) / max(overload["requests"], 1), 2),
        "target_spans_per_s_by_second": overload["target_spans_per_s_by_second"],
        "overload_seconds": round(overload["elapsed_s"]),
        "requests_sent": requests,
        "spans_offered": requests * SPANS_PER_REQUEST,
        "spans_acknowledged": len(acked) * SPANS_PER_REQUEST,
        "spans_stored": sum(stored.values()),
        "spans_lost": len(acked - set(stored)) * SPANS_PER_REQUEST,
        "refusals_with_retry_hint": dict(refusals - without_hint),
        "refusals_without_retry_hint": dict(without_hint),
        "other_answers": dict(other),
        "retry_hints_s": overload["retry_hints_s"],
        "rss_after_start_mb": round(started_mb),
        "rss_peak_mb": round(peak_mb),
        "rss_growth_bound_mb": RSS_GROWTH_BOUND_MB,
        "max_pending_spans": MAX_PENDING_SPANS,
    }
    record_figures("overload", figures)
    print(json.dumps(figures, indent=1))

    assert exit_code == 0
    assert peak_mb - started_mb <= RSS_GROWTH_BOUND_MB, figures
    # Every acknowledged request is stored whole and once; nothing refused was stored.
    assert acked, "nothing was acknowledged"
    assert set(stored) == acked
    assert set(stored.values()) == {SPANS_PER_REQUEST}
    assert status["spans_pending"] == 0
    # The load really was an overload, and every refusal carried a retry hint.
    assert any(key.startswith("http") for key in refusals), figures
    assert not without_hint, figures
    # No other answer at all: in particular no gRPC call left waiting in grpc core's queue until it is
    # CANCELLED without a hint (the gRPC listener takes calls on a loop of its own; see otlp_grpc.py).
    assert not other, figures
    assert any(key.startswith("grpc") for key in refusals), figures
