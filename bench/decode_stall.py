"""Decode cost per span (protobuf vs OTLP/JSON) and small-request latency while a large export is decoded.

``python -m bench.decode_stall`` prints both as JSON. The decode part times ``parse_traces`` and
``spans_from_request`` on the same request encoded both ways, and ``json_format.ParseDict`` (the decoder
before orjson) for comparison. The stall part starts an in-process service (once per
large export and acknowledgement mode), posts one large export over OTLP/HTTP (8 MB or 30 MB of OTLP/JSON,
or 30 MB of protobuf) and, until it is answered, sends rounds of a one-span gRPC export, a one-span
OTLP/HTTP export and ``POST /api/v1/query {"sql": "SELECT 1"}``, one after another, and reports their
latency percentiles, split by the step the large export was in when each probe started
(``bench.stall_trace`` times those steps inside the service). The probes run on the service's own event
loop, so their client-side cost is in the figures. Everything is on loopback and bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import grpc
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bench.payloads import build_request, build_template
from bench.stall_trace import PhaseLog, install, summary
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
        request = build_request(spans, llm)[0]
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


@dataclass(frozen=True, slots=True)
class LargeCase:
    """One large export: how it is encoded and how many spans of which size it carries."""

    name: str
    spans: int
    llm: bool
    json_body: bool

    def body(self) -> bytes:
        if not self.spans:
            return b""
        request = build_request(self.spans, self.llm)[0]
        return otlp_json(request) if self.json_body else request.SerializeToString()


CASES = (
    LargeCase("idle", 0, llm=False, json_body=False),  # the same probes with no large export: the floor
    LargeCase("json_8mb", 20_000, llm=False, json_body=True),
    LargeCase("json_30mb", 70_000, llm=False, json_body=True),
    LargeCase("protobuf_30mb", 5_600, llm=True, json_body=False),
)
IDLE_ROUNDS = 40
"""Probe rounds of the idle case."""
SLOW_MS = 50.0
"""The issue's bound: a probe slower than this is listed with what it overlapped."""
GRPC_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _config(workdir: str, acknowledge: str) -> Any:
    from spanscore.config import load_config

    config = load_config(None, environ={})
    config.storage.dsn = f"chdb://{workdir}/data"
    config.storage.spool_dir = f"{workdir}/spool"
    config.storage.acknowledge = acknowledge
    config.collector.grpc.port = config.collector.http.port = config.api.port = 0
    return config


async def _probe(latencies: dict[str, list[float]], name: str, call: Callable[[], Awaitable[object]]) -> None:
    started = time.perf_counter()
    await call()
    latencies[name].append((time.perf_counter() - started) * 1000)


async def _stall(case: LargeCase, acknowledge: str, probes: int, limit_s: float) -> dict[str, Any]:
    """Send ``case``'s export over HTTP and, until it is answered, small exports (gRPC, HTTP) and ``SELECT 1``."""
    from spanscore.server.running import tune_for_serving
    from spanscore.server.service import Service

    large = case.body()
    small = build_template(1, llm=False)
    phases = PhaseLog()
    kinds = ("grpc_export", "http_export", "select_1")
    latencies: dict[str, list[float]] = {name: [] for name in kinds}
    starts: dict[str, list[float]] = {name: [] for name in kinds}
    with tempfile.TemporaryDirectory(prefix="spanscore-bench-stall-") as workdir:
        service = Service(_config(workdir, acknowledge))
        await service.start()
        tune_for_serving()  # as `spanscore serve` does once started
        install(service, phases)
        unwatch = phases.watch_gc()
        try:
            base = f"http://127.0.0.1:{service.http.port}"
            query = f"http://127.0.0.1:{service.api.port}/api/v1/query"
            media = "application/json" if case.json_body else "application/x-protobuf"
            protobuf = {"Content-Type": "application/x-protobuf"}
            async with (
                aiohttp.ClientSession() as session,
                grpc.aio.insecure_channel(f"127.0.0.1:{service.grpc.port}") as channel,
            ):
                export = channel.unary_unary(GRPC_EXPORT)  # raw bytes both ways

                async def post(url: str, **kwargs: Any) -> None:
                    async with session.post(url, **kwargs) as response:
                        await response.read()
                        if response.status != 200:
                            raise RuntimeError(f"{url}: HTTP {response.status}")

                calls: dict[str, Callable[[], Awaitable[object]]] = {
                    "grpc_export": lambda: export(small.encode(len(starts["grpc_export"])), timeout=60),
                    "http_export": lambda: post(f"{base}/v1/traces", headers=protobuf,
                                                data=small.encode(10**6 + len(starts["http_export"]))),
                    "select_1": lambda: post(query, json={"sql": "SELECT 1"}),
                }  # fmt: skip
                for name in kinds:  # warm every path once before the large export
                    await calls[name]()
                started = time.perf_counter()
                if large:
                    large_task = asyncio.create_task(
                        post(f"{base}/v1/traces", data=large, headers={"Content-Type": media})
                    )
                else:  # the idle case: a fixed number of rounds instead of "until the large export is answered"
                    large_task = asyncio.create_task(asyncio.sleep(0))
                    await large_task
                await asyncio.sleep(0.05)
                for round_number in range(probes):
                    if (large and large_task.done()) or (not large and round_number >= IDLE_ROUNDS):
                        break
                    if time.perf_counter() - started > limit_s:
                        break
                    for name in kinds:
                        starts[name].append(time.perf_counter())
                        await _probe(latencies, name, calls[name])
                await large_task
                large_s = time.perf_counter() - started
        finally:
            unwatch()
            await service.shutdown()
    return _stall_result(case, acknowledge, len(large), large_s, latencies, starts, phases, started)


def _stall_result(
    case: LargeCase,
    acknowledge: str,
    size: int,
    large_s: float,
    latencies: dict[str, list[float]],
    starts: dict[str, list[float]],
    phases: PhaseLog,
    origin: float,
) -> dict[str, Any]:
    by_phase: dict[str, dict[str, Any]] = {}
    slow: list[tuple[float, str, float, list[str]]] = []
    for name, values in latencies.items():
        grouped: dict[str, list[float]] = {}
        for moment, value in zip(starts[name], values, strict=True):
            grouped.setdefault(phases.phase_at(moment), []).append(value)
            if value > SLOW_MS:
                slow.append((value, name, moment, phases.overlapping(moment, moment + value / 1000)))
        by_phase[name] = {phase: summary(v) for phase, v in grouped.items()}
    return {
        "case": case.name, "acknowledge": acknowledge, "large_body_mb": round(size / 1e6, 1),
        "large_spans": case.spans, "large_seconds": round(large_s, 2),
        **{f"{name}_ms": summary(values) for name, values in latencies.items()},
        "by_large_phase_ms": by_phase,
        "small_ack_wait_ms": summary(phases.small_waits()),
        "small_flush_ms": summary(phases.small_flushes()),
        "gc_pause_ms": {f"gen{g}": summary(phases.gc_pauses(g)) for g in (0, 1, 2)},
        "slow_probes": [{"kind": kind, "start_ms": round((moment - origin) * 1000, 1), "ms": round(ms, 1),
                         "overlaps": overlaps} for ms, kind, moment, overlaps in sorted(slow, reverse=True)[:12]],
        "large_steps": [i.as_dict(origin) for i in phases.large()],
    }  # fmt: skip


async def _stalls(cases: list[LargeCase], modes: list[str], probes: int, limit_s: float) -> list[dict[str, Any]]:
    out = []
    for case in cases:
        for acknowledge in modes:
            out.append(await _stall(case, acknowledge, probes, limit_s))
            print(f"{case.name} ack={acknowledge}: " + ", ".join(
                f"{k} p50 {out[-1][k + '_ms']['p50']} p99 {out[-1][k + '_ms']['p99']}"
                for k in ("grpc_export", "http_export", "select_1")), file=sys.stderr, flush=True)  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spans", type=int, default=2000, help="spans per request for the decode costs")
    parser.add_argument("--probes", type=int, default=300, help="most probe rounds sent during one large export")
    parser.add_argument("--limit-s", type=float, default=120.0, help="most seconds of probing per large export")
    parser.add_argument("--case", action="append", choices=[c.name for c in CASES], help="large export(s) to send")
    parser.add_argument("--acknowledge", action="append", choices=["stored", "spooled"], help="ack mode(s)")
    parser.add_argument("--no-decode", action="store_true", help="skip the decode cost part")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.case or c.name in args.case]
    modes = args.acknowledge or ["stored", "spooled"]
    result: dict[str, Any] = {"load_average": os.getloadavg()}
    if not args.no_decode:
        result["decode"] = decode_costs(args.spans)
    result["stall"] = asyncio.run(_stalls(cases, modes, args.probes, args.limit_s))
    result["load_average_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
