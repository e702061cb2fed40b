"""Run one framework's agent, with its default telemetry, against a real ``spanscore serve``; check its metrics.

Issue #39: an app that sets ``OTEL_EXPORTER_OTLP_ENDPOINT`` sends metrics there too, and OpenLIT, Strands,
Google ADK and Semantic Kernel emit them. This script shows, for one release, that its exporter logs no
error against spanscore and that its metrics are stored and rolled up. Run it with the project's venv; the
framework lives in a venv of its own (``--python``), never in the project's dependencies:

    python -m venv /tmp/venv-openlit && /tmp/venv-openlit/bin/pip install "openlit==1.45.0" openai
    .venv/bin/python scripts/metrics_check/check.py --framework openlit --python /tmp/venv-openlit/bin/python

It starts ``spanscore serve`` (from ``--serve-root``, the repository by default: point it at a checkout of an
older commit to see what that one did) on free loopback ports in a temporary directory, the fake
OpenAI-compatible model of ``tests/fakes`` in this process, then ``agents.py FRAMEWORK`` with the framework's
python and the standard OTel variables. Its output (stdout and stderr, where exporters log) is saved in
``--out``. Exit status 0 only when the output has no export error, the receiver took at least one metric
point and, where the framework records the GenAI client metrics, they reached the ``genai_usage_minute``
roll-up.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
AGENTS = Path(__file__).with_name("agents.py")
sys.path.insert(0, str(ROOT))

from spanscore.testing.ports import free_port  # noqa: E402
from tests.fakes.fake_openai_chat import FakeOpenAIChat  # noqa: E402

FRAMEWORKS = ("openlit", "strands", "google_adk", "semantic_kernel")
GRPC = {"semantic_kernel"}
"""Frameworks whose documented set-up uses the OTLP/gRPC exporters; the others export OTLP/HTTP."""

ERRORS = re.compile(r"Failed to export|\b404\b|UNIMPLEMENTED|Exception while exporting|Transient error", re.I)
TABLES = ("sum", "gauge", "histogram", "exponential_histogram", "summary")
PRICES = {"chat": {"gpt-4o-mini": {"promptPrice": 0.00015, "completionPrice": 0.0006}}, "embeddings": {}}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    service = f"metrics-check-{args.framework}"
    with tempfile.TemporaryDirectory(prefix="spanscore-metrics-check-") as work:
        ports = {"grpc": free_port(), "http": free_port(), "api": free_port()}
        serve_env = _serve_environment(Path(args.serve_root).resolve(), ports)
        server = _start_serve(Path(work), serve_env, out / f"{args.framework}.serve.log")
        try:
            with FakeOpenAIChat() as model:
                agent = _run_agent(args, ports, model.url, service, Path(work), out)
            result = _verdict(args.framework, agent, _stored(Path(work), serve_env, service, args.wait))
        finally:
            server.terminate()
            server.wait(timeout=60)
    (out / f"{args.framework}.result.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", required=True, choices=FRAMEWORKS)
    parser.add_argument("--python", required=True, help="the python of a venv that holds the framework")
    parser.add_argument("--serve-root", default=str(ROOT), help="the spanscore checkout to serve (PYTHONPATH)")
    parser.add_argument("--out", default="metrics-check-out", help="where the logs and the result go")
    parser.add_argument("--wait", type=float, default=20.0, help="seconds to wait for the points to be stored")
    return parser


def _serve_environment(serve_root: Path, ports: dict[str, int]) -> dict[str, str]:
    return {
        "PYTHONPATH": str(serve_root),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "SPANSCORE_COLLECTOR__GRPC__PORT": str(ports["grpc"]),
        "SPANSCORE_COLLECTOR__HTTP__PORT": str(ports["http"]),
        "SPANSCORE_API__PORT": str(ports["api"]),
        "SPANSCORE_COLLECTOR__RUNS__QUIET_PERIOD_S": "0.5",
    }


def _start_serve(work: Path, environ: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``spanscore serve`` with its output in ``log``; returns once its three ports take connections."""
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "spanscore.cli.commands", "serve"], cwd=work, env=environ, stdout=sink, stderr=sink
        )
    ports = [int(environ[key]) for key in environ if key.endswith("__PORT")]
    deadline = time.monotonic() + 120
    while not all(_listening(port) for port in ports):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"spanscore serve did not start; see {log}")
        time.sleep(0.5)
    return process


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _run_agent(
    args: argparse.Namespace, ports: dict[str, int], model_url: str, service: str, work: Path, out: Path
) -> dict[str, Any]:
    """Run the agent in the framework's venv; return its exit status, its log and the error lines in it."""
    prices = work / "prices.json"
    prices.write_text(json.dumps(PRICES))
    port = ports["grpc"] if args.framework in GRPC else ports["http"]
    environ = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "FAKE_MODEL_URL": model_url,
        "OPENLIT_PRICES": str(prices),
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_SERVICE_NAME": service,
        "OTEL_METRIC_EXPORT_INTERVAL": "1000",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "10",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    command = [args.python, str(AGENTS), args.framework]
    done = subprocess.run(command, cwd=work, env=environ, capture_output=True, text=True, timeout=600)
    text = f"$ {' '.join(command)}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    log = out / f"{args.framework}.agent.log"
    log.write_text(text)
    errors = [line.strip() for line in text.splitlines() if ERRORS.search(line)]
    return {"exit": done.returncode, "log": str(log), "export_errors": errors[:20], "export_error_lines": len(errors)}


def _query(work: Path, environ: dict[str, str], sql: str) -> list[dict[str, Any]] | str:
    """Rows of a query through ``spanscore query`` (the query API), or its error text."""
    command = [sys.executable, "-m", "spanscore.cli.commands", "query", "--format", "json", sql]
    done = subprocess.run(command, cwd=work, env=environ, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return (done.stderr or done.stdout).strip().splitlines()[-1] if (done.stderr or done.stdout) else "failed"
    parsed = json.loads(done.stdout)
    rows = parsed.get("data", parsed) if isinstance(parsed, dict) else parsed
    return list(rows)


def _stored(work: Path, environ: dict[str, str], service: str, wait: float) -> dict[str, Any]:
    """What reached storage for ``service``: points per table and metric, spans, and the GenAI roll-up.

    Polls until two reads in a row agree (writes are batched), for at most ``wait`` seconds.
    """
    where = f"ServiceName = '{service}'"
    queries = {
        f"otel_metrics_{table}": f"SELECT MetricName, count() AS points FROM otel_metrics_{table} WHERE {where} "
        "GROUP BY MetricName ORDER BY MetricName"
        for table in TABLES
    }
    queries["spans"] = f"SELECT count() AS spans FROM otel_traces WHERE {where}"
    queries["genai_usage_minute"] = (
        "SELECT Agent, Model, sum(Calls) AS calls, sum(InputTokens) AS input_tokens, "
        f"sum(OutputTokens) AS output_tokens, round(sum(DurationSum), 4) AS duration_s FROM genai_usage_minute "
        f"WHERE {where} GROUP BY Agent, Model ORDER BY Agent, Model"
    )
    deadline = time.monotonic() + wait
    last: dict[str, Any] = {}
    while True:
        time.sleep(2)
        now = {name: _query(work, environ, sql) for name, sql in queries.items()}
        if now == last or time.monotonic() > deadline:
            return now
        last = now


def _verdict(framework: str, agent: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    metric_names = {
        str(row["MetricName"])
        for table in TABLES
        if isinstance(stored[f"otel_metrics_{table}"], list)
        for row in stored[f"otel_metrics_{table}"]
    }
    genai = {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"} & metric_names
    usage = stored["genai_usage_minute"]
    rolled_up = not genai or (isinstance(usage, list) and sum(int(row["calls"]) for row in usage) > 0)
    ok = agent["exit"] == 0 and not agent["export_errors"] and bool(metric_names) and rolled_up
    return {
        "framework": framework,
        "ok": ok,
        "agent": agent,
        "metric_names": sorted(metric_names),
        "genai_metrics": sorted(genai),
        "stored": stored,
    }


if __name__ == "__main__":
    sys.exit(main())
