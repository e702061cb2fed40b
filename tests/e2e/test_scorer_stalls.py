"""One span cannot freeze a real ``spanscore serve`` through a scorer (issue #37, item 2).

Observed: with a rule scoring ``tone_consistency``, one answer of ``"y " * 24000`` (48 KB, no full
stop) held ``/healthz`` for 8.7-12.6 s, because the sentence split was quadratic on text without an end
mark and Python's ``re`` holds the GIL; with a 160 KB answer, SIGTERM was not handled for over 60 s.
Each observation is replayed here against a real process. A custom scorer that never returns and holds
the GIL while it runs (``stuck_scorer``) stands for every scorer that could still get stuck: it must
be cut at its deadline, counted, and leave the service answering and the pipeline going.

The ceilings below are far above what a healthy service needs and far below what the observed stalls
took: they tell a service that answers from one that is frozen, not a fast one from a slow one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.e2e.otlp_clients import export, grpc_exporter
from tests.ports import free_port

REPOSITORY = Path(__file__).resolve().parents[2]
HEALTH_CEILING_S = 3.0
"""A /healthz answer slower than this means the service is frozen (the observed stall was 8.7-12.6 s)."""
EXIT_CEILING_S = 30.0
"""A SIGTERM not acted on within this is not handled promptly (observed: over 60 s)."""


class Serve:
    """A ``spanscore serve`` process with its output kept, and its ports."""

    def __init__(self, tmp_path: Path, rules: list[dict[str, Any]], scoring: dict[str, Any]) -> None:
        self.grpc, self.http, self.api = free_port(), free_port(), free_port()
        config = {
            "collector": {
                "grpc": {"port": self.grpc},
                "http": {"port": self.http},
                "runs": {"quiet_period_s": 0.3},
            },
            "api": {"port": self.api},
            "storage": {"flush_interval_s": 0.2},
            "scoring": {"poll_interval_s": 0.05, **scoring},
            "rules": rules,
        }
        path = tmp_path / "spanscore.yaml"
        path.write_text(json.dumps(config), encoding="utf-8")
        environ = {**os.environ, "PYTHONPATH": str(REPOSITORY)}  # the test scorers load by import path
        self.process = subprocess.Popen(
            [sys.executable, "-m", "spanscore.cli.commands", "serve", "-c", str(path)],
            cwd=tmp_path,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._started = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self._started.wait(90):
            self.kill()
            raise AssertionError("service did not start:\n" + "".join(self.lines[-30:]))

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            if "spanscore serving" in line:
                self._started.set()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()  # kill -9: a frozen service would not act on anything gentler
        self.process.wait(timeout=30)

    def health_s(self) -> float:
        """Seconds /healthz took to answer; infinity when it did not answer within the ceiling."""
        started = time.monotonic()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.api}/healthz", timeout=HEALTH_CEILING_S) as reply:
                reply.read()
        except (TimeoutError, urllib.error.URLError):
            return float("inf")
        return time.monotonic() - started

    def query(self, sql: str) -> list[dict[str, Any]]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.api}/api/v1/query",
            data=json.dumps({"sql": sql}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            rows: list[dict[str, Any]] = json.loads(reply.read())["data"]
            return rows

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.api}/metrics", timeout=60) as reply:
            return str(reply.read().decode())

    def send(self, answer: str) -> str:
        """Export one agent run answering ``answer``; its trace id."""
        memory = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "stall-test"}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        with provider.get_tracer("agent").start_as_current_span("invoke_agent writer") as root:
            root.set_attributes(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "writer",
                    "gen_ai.input.messages": _messages("user", "Write something long."),
                    "gen_ai.output.messages": _messages("assistant", answer),
                }
            )
        provider.shutdown()
        spans = list(memory.get_finished_spans())
        assert export(grpc_exporter(self.grpc), spans) == "SUCCESS"
        return f"{spans[0].get_span_context().trace_id:032x}"

    def wait_for_scores(self, trace_id: str, wait_s: float, health: list[float]) -> list[dict[str, Any]]:
        """Poll until ``trace_id`` has a score, probing /healthz meanwhile; the rows (empty on timeout)."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            health.append(self.health_s())
            rows = self.query(
                f"SELECT Scorer, Status, Score, Error, Attributes FROM scores FINAL WHERE TraceId = '{trace_id}'"
            )
            if rows:
                return rows
            time.sleep(0.1)
        return []

    def stop(self) -> float:
        """SIGTERM, then the seconds until the process exited (infinity past the ceiling, and it is killed)."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=EXIT_CEILING_S)
        except subprocess.TimeoutExpired:
            self.kill()
            return float("inf")
        return time.monotonic() - started


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


@pytest.fixture
def serves() -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for serve in started:
        serve.kill()


TONE = [{"name": "tone", "where": {"service.name": "stall-test"}, "scorers": ["tone_consistency"]}]


@pytest.mark.slow
def test_health_answers_while_a_48_kb_answer_without_a_full_stop_is_scored(tmp_path: Path, serves: list[Serve]) -> None:
    serve = Serve(tmp_path, TONE, {})
    serves.append(serve)
    trace_id = serve.send("y " * 24000)
    health: list[float] = []
    rows = serve.wait_for_scores(trace_id, 60, health)
    assert max(health) < HEALTH_CEILING_S, f"/healthz was frozen while the answer was scored: {health}"
    assert [(row["Scorer"], row["Status"]) for row in rows] == [("tone_consistency", "ok")], rows
    # Past the cap, the text is cut and the score says so.
    longer = serve.send("y " * 80000)
    assert [row["Status"] for row in serve.wait_for_scores(longer, 60, health)] == ["ok"]
    cut = serve.query(f"SELECT Attributes['text.cut'] AS cut FROM scores FINAL WHERE TraceId = '{longer}'")
    assert cut == [{"cut": "output: first 100000 of 160000 characters scored"}], cut
    assert max(health) < HEALTH_CEILING_S, health
    assert serve.stop() < EXIT_CEILING_S


@pytest.mark.slow
def test_sigterm_while_a_160_kb_answer_is_scored_exits_promptly_and_cleanly(
    tmp_path: Path, serves: list[Serve]
) -> None:
    serve = Serve(tmp_path, TONE, {})
    serves.append(serve)
    serve.send("y " * 80000)
    time.sleep(1.5)  # past the quiet period: the run is ready, and its scoring has started
    took = serve.stop()
    assert took < EXIT_CEILING_S, "SIGTERM was not acted on:\n" + "".join(serve.lines[-20:])
    assert serve.process.returncode == 0, "".join(serve.lines[-20:])
    assert any("signal received" in line for line in serve.lines)


STUCK = [{"name": "stuck", "where": {"service.name": "stall-test"}, "scorers": ["tests.e2e.stuck_scorer:stuck"]}]


@pytest.mark.slow
def test_a_stuck_scorer_is_killed_at_its_deadline_counted_and_the_pipeline_goes_on(
    tmp_path: Path, serves: list[Serve]
) -> None:
    serve = Serve(tmp_path, STUCK, {"code_timeout_s": 3.0, "code_processes": 1})
    serves.append(serve)
    stuck = serve.send("stuck forever")
    health: list[float] = []
    rows = serve.wait_for_scores(stuck, 60, health)
    assert max(health) < HEALTH_CEILING_S, f"/healthz was frozen while a scorer was stuck: {health}"
    assert [(row["Status"], row["Score"]) for row in rows] == [("error", None)], rows
    assert "timed out" in rows[0]["Error"] and "code_timeout_s" in rows[0]["Error"], rows
    assert "spanscore_scoring_code_timed_out_total 1.0" in serve.metrics()
    # The one worker was replaced: the next run is scored.
    healthy = serve.send("a fine answer")
    assert [(row["Status"], row["Score"]) for row in serve.wait_for_scores(healthy, 60, health)] == [("ok", 1.0)]
    # SIGTERM while a scorer is stuck again: handled at once, and the stuck job ends at its deadline.
    serve.send("stuck again")
    time.sleep(1.5)
    took = serve.stop()
    assert took < EXIT_CEILING_S, "SIGTERM was not acted on:\n" + "".join(serve.lines[-20:])
    assert serve.process.returncode == 0, "".join(serve.lines[-20:])
