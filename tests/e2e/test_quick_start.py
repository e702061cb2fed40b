"""The README's quick start scores something: `spanscore serve` with no config file, then `spanscore demo`.

Real processes on loopback ports; no config file, so the documented default rule is what scores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.test_process import _free_port

ROOT = Path(__file__).resolve().parents[2]


def _environment(grpc: int, http: int, api: int) -> dict[str, str]:
    return {
        "PYTHONPATH": str(ROOT),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SPANSCORE_COLLECTOR__GRPC__PORT": str(grpc),
        "SPANSCORE_COLLECTOR__HTTP__PORT": str(http),
        "SPANSCORE_API__PORT": str(api),
        "SPANSCORE_COLLECTOR__RUNS__QUIET_PERIOD_S": "0.5",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "5",
    }


def _cli(cwd: Path, environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "spanscore.cli.commands", *args]
    return subprocess.run(command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=120)


def _banner(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("    rule ") or line.startswith("    rules:"):
            return "".join(lines)
    raise AssertionError("no banner: " + "".join(lines))


@pytest.mark.slow
def test_serve_without_config_then_demo_scores_runs_spread_over_hours(tmp_path: Path) -> None:
    grpc, http, api = _free_port(), _free_port(), _free_port()
    environ = _environment(grpc, http, api)
    process = subprocess.Popen(
        [sys.executable, "-m", "spanscore.cli.commands", "serve"],
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        banner = _banner(process)
        assert f"dashboard: http://127.0.0.1:{api}/dashboard/" in banner
        assert "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" in banner and f"http://127.0.0.1:{grpc}" in banner
        assert "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf" in banner and f"http://127.0.0.1:{http}" in banner
        assert "rule default: sample=1 scorers=answer_health" in banner

        demo = _cli(tmp_path, environ, "demo", "--traces", "12", "--hours", "4")
        assert demo.returncode == 0, demo.stderr
        assert "12 of 12 agent traces accepted" in demo.stdout
        assert f"dashboard: http://127.0.0.1:{api}/dashboard/" in demo.stdout

        spread = "dateDiff('minute', min(RunTimestamp), max(RunTimestamp))"
        sql = f"SELECT uniqExact(RunId), {spread} FROM scores WHERE Rule = 'default'"
        row = ["0", "0"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and row[0] != "12":
            result = _cli(tmp_path, environ, "query", "--format", "csv", sql)
            row = result.stdout.strip().splitlines()[-1].split(",") if result.returncode == 0 else row
            time.sleep(0.5)
        assert row[0] == "12"
        assert int(row[1]) >= 120  # spread over hours: the charts draw lines
        # The default rule tells the demo's healthy runs from its broken one (a failed tool, an apology).
        labels = _cli(tmp_path, environ, "query", "--format", "csv", "SELECT groupUniqArray(Label) FROM scores")
        assert "pass" in labels.stdout and "fail" in labels.stdout, labels.stdout

        status = _cli(tmp_path, environ, "status", "--format", "json")
        metrics = json.loads(status.stdout)
        assert metrics["rules_loaded"] == 1 and metrics['rule_scorers{rule="default"}'] == 1
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0


def test_demo_reports_what_was_accepted_not_what_was_queued(tmp_path: Path) -> None:
    environ = _environment(_free_port(), _free_port(), _free_port())  # nothing listens there
    demo = _cli(tmp_path, environ, "demo", "--traces", "2")
    assert demo.returncode == 1
    assert "0 of 2 agent traces accepted" in demo.stdout
    assert "not accepted" in demo.stderr
