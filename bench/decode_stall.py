"""Decode cost per span (protobuf vs OTLP/JSON) and small-request latency while a large export is decoded.

``python -m bench.decode_stall`` prints both as JSON. The decode part times ``parse_traces`` and
``spans_from_request`` on the same request encoded both ways, and ``json_format.ParseDict`` (the decoder
before orjson) for comparison. The stall part starts an in-process service, posts one large OTLP/JSON
export and, while it is decoded, sends small exports and ``GET /healthz`` one after another and reports
their latency percentiles. Everything is on loopback and bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import tempfile
import time
from typing import Any

import aiohttp
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bench.load import percentile
from bench.payloads import build_request
from spanscore.collector.decode import parse_traces, spans_from_request


def otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """OTLP/JSON of ``request``: protobuf JSON with ids in hex."""
    document = json_format.MessageToDict(request)
    for resource_spans in document["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(document).encode()


def _per_span(spans: int, work: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return round(best / spans * 1e6, 1)


def decode_costs(spans: int = 2000, repeat: int = 3) -> dict[str, dict[str, float]]:
    """Microseconds per span, best of ``repeat``, for small and 5 KB LLM spans."""
    out: dict[str, dict[str, float]] = {}
    for llm in (False, True):
        request, _ = build_request(spans, llm)
        protobuf, text = request.SerializeToString(), otlp_json(request)

        def from_protobuf(body: bytes = protobuf) -> None:
            spans_from_request(parse_traces(body, json_body=False))

        def from_json(body: bytes = text) -> None:
            spans_from_request(parse_traces(body, json_body=True))

        def json_format_only(body: bytes = text) -> None:
            json_format.Parse(body, ExportTraceServiceRequest(), ignore_unknown_fields=True)

        out["llm" if llm else "small"] = {
            "protobuf_us_per_span": _per_span(spans, from_protobuf, repeat),
            "json_us_per_span": _per_span(spans, from_json, repeat),
            "json_format_parse_only_us_per_span": _per_span(spans, json_format_only, 1),
        }
    return out


async def _stall(large_spans: int, probes: int) -> dict[str, Any]:
    from spanscore.config import load_config
    from spanscore.service import Service

    request, _ = build_request(large_spans, llm=False)
    large = otlp_json(request)
    small = otlp_json(build_request(1, llm=False)[0])
    with tempfile.TemporaryDirectory(prefix="spanscore-bench-stall-") as workdir:
        config = load_config(None, environ={})
        config.storage.dsn = f"chdb://{workdir}/data"
        config.storage.spool_dir = f"{workdir}/spool"
        config.collector.grpc.port = config.collector.http.port = config.api.port = 0
        service = Service(config)
        await service.start()
        try:
            traces = f"http://127.0.0.1:{service.http.port}/v1/traces"
            health = f"http://127.0.0.1:{service.api.port}/healthz"
            headers = {"Content-Type": "application/json"}
            latencies: dict[str, list[float]] = {"small_export": [], "healthz": []}
            async with aiohttp.ClientSession() as session:
                started = time.perf_counter()
                large_task = asyncio.create_task(session.post(traces, data=large, headers=headers))
                await asyncio.sleep(0.05)
                for _ in range(probes):
                    if large_task.done():
                        break
                    for name, call in (("small_export", lambda: session.post(traces, data=small, headers=headers)),
                                       ("healthz", lambda: session.get(health))):  # fmt: skip
                        t = time.perf_counter()
                        async with call() as response:
                            await response.read()
                        latencies[name].append((time.perf_counter() - t) * 1000)
                async with await large_task as response:
                    status = response.status
                large_s = time.perf_counter() - started
        finally:
            await service.shutdown()
    return {
        "large_body_mb": round(len(large) / 1e6, 1),
        "large_status": status,
        "large_seconds": round(large_s, 2),
        **{f"{name}_ms": {"n": len(v), "p50": round(percentile(v, 0.5), 1), "p99": round(percentile(v, 0.99), 1),
                          "max": round(max(v, default=0), 1)} for name, v in latencies.items()},
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spans", type=int, default=2000, help="spans per request for the decode costs")
    parser.add_argument("--large-spans", type=int, default=20_000, help="spans in the large export")
    parser.add_argument("--probes", type=int, default=200, help="most small requests sent during the large one")
    args = parser.parse_args()
    result = {"decode": decode_costs(args.spans), "stall": asyncio.run(_stall(args.large_spans, args.probes))}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
