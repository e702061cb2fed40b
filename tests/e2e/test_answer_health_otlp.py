"""The default rule reads real OTLP agent traces the way real instrumentations emit them (issue #38).

A real `spanscore serve` without a config (the default rule) receives traces from the OpenTelemetry
SDK over gRPC: an ``invoke_agent`` root with the answer, a ``chat`` span carrying the finish reason
(not the root, where most frameworks never put it), ``execute_tool`` spans with their status. A run
whose last model call stopped at ``length`` fails; one whose earlier call was cut and whose last
call finished passes; a tool span that ended in ERROR fails the run unless a later call of the same
tool worked.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

from tests.e2e.otlp_clients import grpc_exporter
from tests.e2e.test_quick_start import _banner, _cli, _environment
from tests.ports import free_port

ANSWER = "Roth contributions are taxed now; traditional ones are taxed on withdrawal."


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _send(port: int, name: str, finish: list[str], tools: list[tuple[str, bool]]) -> str:
    """One agent trace: chat calls with ``finish`` reasons, then tool calls (name, failed); returns its trace id."""
    provider = TracerProvider(resource=Resource.create({"service.name": "e2e-health"}))
    provider.add_span_processor(SimpleSpanProcessor(grpc_exporter(port)))
    tracer = provider.get_tracer("tests.e2e.answer_health")
    with tracer.start_as_current_span(f"invoke_agent {name}") as root:
        root.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": name,
                "gen_ai.input.messages": _messages("user", "Roth or traditional IRA?"),
                "gen_ai.output.messages": _messages("assistant", ANSWER),
            }
        )
        for tool, failed in tools:
            with tracer.start_as_current_span(f"execute_tool {tool}", kind=SpanKind.INTERNAL) as span:
                span.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool})
                if failed:
                    span.set_status(Status(StatusCode.ERROR, "ConnectionRefusedError: Connection refused"))
                else:
                    span.set_attribute("gen_ai.tool.call.result", '{"ok": true}')
        for reason in finish:
            with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT) as chat:
                chat.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": [reason]})
        trace_id = format(root.get_span_context().trace_id, "032x")
    provider.shutdown()
    return trace_id


def _rows(output: str) -> list[dict[str, str]]:
    value = json.loads(output)
    return value["data"] if isinstance(value, dict) else value  # ClickHouse JSON: {"meta", "data", "rows"}


@pytest.mark.slow
def test_the_default_rule_reads_finish_reasons_and_tool_status_from_otlp_spans(tmp_path: Path) -> None:
    grpc, http, api = free_port(), free_port(), free_port()
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
        _banner(process)
        expected = {
            _send(grpc, "cut", ["tool_calls", "length"], []): "fail",
            _send(grpc, "retried", ["length", "stop"], []): "pass",
            _send(grpc, "filtered", ["content_filter"], []): "fail",
            _send(grpc, "tool_down", ["stop"], [("get_rates", True)]): "fail",
            _send(grpc, "tool_retried", ["stop"], [("get_rates", True), ("get_rates", False)]): "pass",
        }
        sql = "SELECT TraceId, Label, Reason FROM scores FINAL WHERE Scorer = 'answer_health'"
        rows: dict[str, dict[str, str]] = {}
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not expected.keys() <= rows.keys():
            result = _cli(tmp_path, environ, "query", "--format", "json", sql)
            if result.returncode == 0:
                rows = {row["TraceId"]: row for row in _rows(result.stdout)}
            time.sleep(0.5)
        got = {trace: rows[trace]["Label"] for trace in expected if trace in rows}
        assert got == expected, {trace: rows.get(trace, {}).get("Reason") for trace in expected}
        cut = next(trace for trace, label in expected.items() if label == "fail")
        assert "length" in rows[cut]["Reason"]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
