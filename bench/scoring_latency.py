"""Run complete -> code-scorer score queryable, while background traffic is ingested.

A service runs with one rule (completeness on service ``bench-scored``) and
the default 2 s quiet period. A load process sends background spans at a
paced rate (5,000 spans/s by default) that the rule filters out but the
assembler and sampler still see. Every half second the probe sends one
finished agent run (OTel GenAI attributes) and polls the query API until its
score is there. The figure is seconds from the root span's end to the score
being queryable; the target is quiet period + 1 s at p95.

    python -m bench.scoring_latency [--seconds 30] [--spans-per-second 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from bench.load import EXPORT_METHOD, run_load
from bench.service import ServiceProcess

QUIET_PERIOD_S = 2.0
SAMPLE_TIMEOUT_S = 20.0


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def agent_run_request(index: int) -> tuple[bytes, str]:
    """One finished agent run (a single invoke_agent span) and its span id."""
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    resource.resource.attributes.append(KeyValue(key="service.name", value=AnyValue(string_value="bench-scored")))
    span = resource.scope_spans.add().spans.add()
    span.trace_id = os.urandom(16)
    span.span_id = os.urandom(8)
    span.name = "invoke_agent support"
    now = time.time_ns()
    span.start_time_unix_nano = now - 50_000_000
    span.end_time_unix_nano = now
    for key, value in (
        ("gen_ai.operation.name", "invoke_agent"),
        ("gen_ai.agent.name", "support"),
        ("gen_ai.input.messages", _messages("user", f"How do I reset my password? ({index})")),
        ("gen_ai.output.messages", _messages("assistant", "Open Settings, then Security, then Reset password.")),
    ):
        span.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))
    return request.SerializeToString(), span.span_id.hex()


def measure(seconds: float, spans_per_second: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="spanscore-bench-scoring-") as workdir:
        extra: dict[str, object] = {
            "rules": [{"name": "latency", "where": {"service.name": "bench-scored"}, "scorers": ["completeness"]}],
        }
        with ServiceProcess(Path(workdir), extra) as service, ProcessPoolExecutor(1) as pool:
            spans_per_request = 100
            load = pool.submit(
                run_load,
                {
                    "transport": "grpc", "port": service.grpc_port, "spans_per_request": spans_per_request,
                    "llm": False, "seconds": seconds + 5, "max_requests": int((seconds + 5) * spans_per_second),
                    "rate": spans_per_second / spans_per_request, "concurrency": 4,
                },
            )  # fmt: skip
            latencies, timeouts = _probe(service, seconds)
            background = load.result(timeout=seconds + 120)
    ordered = sorted(latencies)
    return {
        "samples": len(latencies),
        "timeouts": timeouts,
        "p50_s": statistics.median(ordered) if ordered else None,
        "p95_s": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else None,
        "target_p95_s": QUIET_PERIOD_S + 1.0,
        "background_spans_acked": background.get("acked_spans"),
        "background_spans_per_s": round(
            float(background.get("acked_spans", 0)) / max(float(background.get("elapsed_s", 1)), 1e-9)
        ),  # type: ignore[arg-type]
    }


def _probe(service: ServiceProcess, seconds: float) -> tuple[list[float], int]:
    channel = grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}")
    export = channel.unary_unary(EXPORT_METHOD, request_serializer=None, response_deserializer=None)
    latencies: list[float] = []
    timeouts = 0
    deadline = time.monotonic() + seconds
    index = 0
    try:
        while time.monotonic() < deadline:
            body, span_id = agent_run_request(index)
            index += 1
            ended = time.time()
            export(body, timeout=SAMPLE_TIMEOUT_S)
            sql = f"SELECT count() AS n FROM scores WHERE SpanId = '{span_id}'"
            found = None
            while time.time() < ended + SAMPLE_TIMEOUT_S:
                rows = service.query(sql)
                if rows and int(str(rows[0]["n"])) > 0:
                    found = time.time()
                    break
                time.sleep(0.05)
            if found is None:
                timeouts += 1
            else:
                latencies.append(found - ended)
            time.sleep(0.5)
    finally:
        channel.close()
    return latencies, timeouts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--spans-per-second", type=float, default=5000.0)
    args = parser.parse_args()
    print(json.dumps(measure(args.seconds, args.spans_per_second), indent=2))


if __name__ == "__main__":
    main()
