"""Loading the recorded OTLP/JSON fixtures as spans and log records (shared by the collector tests)."""

from __future__ import annotations

from pathlib import Path

from spanscore.collector.decode import logs_from_request, parse_logs, parse_traces, spans_from_request
from spanscore.records import LogRecord, SpanRecord

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
RECORDED = (
    "otel_genai",
    "otel_genai_logs",
    "otel_genai_events",
    "openinference",
    "openllmetry",
    "openllmetry_legacy",
    "vercel_ai",
    "mastra",
)
NODE = FIXTURES / "node"
"""The JavaScript recorders; ``npm ci`` there to re-record them."""


def load(name: str, folder: Path = FIXTURES) -> tuple[list[SpanRecord], list[LogRecord]]:
    spans = spans_from_request(parse_traces((folder / f"{name}.traces.json").read_bytes(), json_body=True)).items
    logs_path = folder / f"{name}.logs.json"
    logs = logs_from_request(parse_logs(logs_path.read_bytes(), json_body=True)).items if logs_path.exists() else []
    return spans, logs
