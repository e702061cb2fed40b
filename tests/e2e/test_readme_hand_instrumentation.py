"""The README's hand instrumentation, run exactly as written against a live ``spanscore serve`` (#29).

The Python snippet runs with this interpreter and the JavaScript one with node (its OpenTelemetry
packages are the ones pinned in tests/fixtures/traces/node-hand: ``npm ci`` there). Each must give a
stored, scored run with the question as input, the answer as output, the tool call, the agent name
and the session, and its scores must be those of the same scorers on that text.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spanscore.run import Run
from spanscore.scorers import build
from spanscore.server.default_rules import DEFAULT_RULE
from tests.e2e.test_process import _free_port
from tests.e2e.test_quick_start import _banner, _cli, _environment

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
NODE_DIR = ROOT / "tests" / "fixtures" / "traces" / "node-hand"
QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny, 22 C in Paris."
MODEL = "gpt-4o-mini"
DEFAULT_SCORERS = tuple(str(name) for name in DEFAULT_RULE["scorers"])


def readme_snippet(language: str) -> str:
    """The README block of ``language`` that reports a run by hand, exactly as written."""
    section = README.read_text(encoding="utf-8").split("## Report an agent run by hand", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(rf"```{language}\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 1, f"one {language} block expected in the README's hand instrumentation section"
    return str(blocks[0])


def _query_rows(cwd: Path, environ: dict[str, str], sql: str) -> list[list[str]]:
    result = _cli(cwd, environ, "query", "--format", "csv", sql)
    assert result.returncode == 0, result.stderr
    return [line.split(",") for line in result.stdout.strip().splitlines()[1:] if line]


def _scored_traces(cwd: Path, environ: dict[str, str], count: int) -> list[str]:
    """Trace ids of the scored runs once ``count`` of them have all their default scores."""
    sql = "SELECT TraceId, count() FROM scores FINAL WHERE Rule = 'default' GROUP BY TraceId ORDER BY TraceId"
    deadline = time.monotonic() + 60
    rows: list[list[str]] = []
    while time.monotonic() < deadline:
        rows = _query_rows(cwd, environ, sql)
        done = [row[0].strip('"') for row in rows if int(row[1]) == len(DEFAULT_SCORERS)]
        if len(done) >= count:
            return done
        time.sleep(0.5)
    raise AssertionError(f"not scored in time: {rows}")


def _check_run(cwd: Path, environ: dict[str, str], trace_id: str) -> None:
    shown = _cli(cwd, environ, "runs", "show", trace_id, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    (view,) = json.loads(shown.stdout)["runs"]
    assert (view["agent_name"], view["session_id"], view["service_name"]) == (
        "weather_agent",
        "session-42",
        "weather-app",
    )
    assert [(m["role"], m["content"]) for m in view["input"]] == [("user", QUESTION)]
    assert view["answer"] == ANSWER
    assert view["model"] == MODEL  # without it the run showed `model -` (#40 item 9)
    assert [(c["name"], c["arguments"], c["result"]) for c in view["tool_calls"]] == [
        ("get_weather", {"city": "Paris"}, "sunny, 22 C")
    ]
    sql = f"SELECT Scorer, Score FROM scores FINAL WHERE TraceId = '{trace_id}' ORDER BY Scorer"
    scores = {row[0].strip('"'): float(row[1]) for row in _query_rows(cwd, environ, sql)}
    truth = Run(input=QUESTION, output=ANSWER)
    expected = {name: build(name).run(truth).score for name in DEFAULT_SCORERS}
    assert scores == pytest.approx(expected), (scores, expected)


def _serve(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], dict[str, str], dict[str, str]]:
    """``spanscore serve ARGS`` in ``tmp_path`` on free ports: the process, its environment, a client's."""
    grpc, http, api = _free_port(), _free_port(), _free_port()
    environ = _environment(grpc, http, api)
    process = subprocess.Popen(
        [sys.executable, "-m", "spanscore.cli.commands", "serve", *args],
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    _banner(process)
    return process, environ, {**environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{http}"}


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0


@pytest.mark.slow
def test_the_readme_python_snippet_reports_a_run_scored_on_the_right_text(tmp_path: Path) -> None:
    process, environ, client = _serve(tmp_path)
    try:
        python = subprocess.run(
            [sys.executable, "-c", readme_snippet("python")], env=client, capture_output=True, text=True, timeout=60
        )
        assert python.returncode == 0, python.stderr
        (trace,) = _scored_traces(tmp_path, environ, 1)
        _check_run(tmp_path, environ, trace)
    finally:
        _stop(process)


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("node") is None or not (NODE_DIR / "node_modules").exists(),
    reason="the JavaScript snippet needs node and `npm ci` in tests/fixtures/traces/node-hand",
)
def test_the_readme_javascript_snippet_reports_a_run_scored_on_the_right_text(tmp_path: Path) -> None:
    process, environ, client = _serve(tmp_path)
    snippet = NODE_DIR / f".readme-snippet-{time.time_ns()}.mjs"
    try:
        snippet.write_text(readme_snippet("js"), encoding="utf-8")  # beside its node_modules, for the imports
        # The JavaScript SDK reads OTEL_EXPORTER_OTLP_TIMEOUT in milliseconds (Python's in seconds): its default.
        node_env = {key: value for key, value in client.items() if key != "OTEL_EXPORTER_OTLP_TIMEOUT"}
        node = subprocess.run(["node", str(snippet)], env=node_env, capture_output=True, text=True, timeout=60)
        assert node.returncode == 0, node.stderr
        (trace,) = _scored_traces(tmp_path, environ, 1)
        _check_run(tmp_path, environ, trace)
    finally:
        snippet.unlink(missing_ok=True)
        _stop(process)
