"""What concurrent OTLP exports cost a real `spanscore serve` before and after they are authenticated.

Run: ``PYTHONPATH=$PWD python -m bench.grpc_admission [--reads N ...]``. Each case starts a fresh service with
ingest tokens (``bench.service.ServiceProcess``), sends its calls concurrently, each on a connection of its own,
as raw gRPC (the bytes are the message) and prints one JSON line: the statuses, the seconds, and the peak growth
of the service's resident memory (its process tree, sampled every 10 ms by ``bench.rss_tree``) over the
started service. Cases (issue #37, item 1):

- ``unauthenticated``: 8 x 48 MiB exports without a token (4 traces, 4 logs);
- ``authenticated``: 8 x 24 MiB trace exports with the token (one span, one 24 MiB attribute each);
- ``one``: a single authenticated 24 MiB export, the cost of one read slot;
- ``http``: the ``authenticated`` case as 8 concurrent OTLP/HTTP protobuf posts to /v1/traces (``--reads``
  then sets ``collector.http.max_concurrent_reads``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bench.rss_tree import peak_growth
from bench.service import ServiceProcess, temp_workdir

MIB = 1 << 20
TOKEN = "bench-token"
BASE_NS = 1_700_000_000 * 10**9
TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
HTTP_TRACES = "/v1/traces"


def trace_export(size: int, span: int = 1) -> bytes:
    """One valid span whose one attribute carries ``size`` bytes."""
    request = ExportTraceServiceRequest()
    added = request.resource_spans.add().scope_spans.add().spans.add(
        trace_id=b"\x05" * 16, span_id=span.to_bytes(8, "big"), name="large",
        start_time_unix_nano=BASE_NS, end_time_unix_nano=BASE_NS + 1,
    )  # fmt: skip
    added.attributes.add(key="blob").value.string_value = "x" * size
    return bytes(request.SerializeToString())


def log_export(size: int) -> bytes:
    """One valid log record whose body carries ``size`` bytes."""
    request = ExportLogsServiceRequest()
    record = request.resource_logs.add().scope_logs.add().log_records.add(time_unix_nano=BASE_NS)
    record.body.string_value = "x" * size
    return bytes(request.SerializeToString())


async def _call(port: int, method: str, body: bytes, token: str | None) -> str:
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            await channel.unary_unary(method)(body, metadata=metadata, timeout=300)
        except grpc.aio.AioRpcError as error:
            return str(error.code().name)
        return "OK"


async def _post(port: int, path: str, body: bytes, token: str | None) -> str:
    headers = {"Content-Type": "application/x-protobuf", **({"Authorization": f"Bearer {token}"} if token else {})}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
        async with session.post(f"http://127.0.0.1:{port}{path}", data=body, headers=headers) as reply:
            await reply.read()
            return str(reply.status)


async def _all(port: int, calls: list[tuple[str, bytes]], token: str | None) -> list[str]:
    send = _post if calls[0][0] == HTTP_TRACES else _call
    return list(await asyncio.gather(*(send(port, method, body, token) for method, body in calls)))


def cases() -> dict[str, tuple[list[tuple[str, bytes]], str | None]]:
    traces, logs = trace_export(48 * MIB), log_export(48 * MIB)
    return {
        "unauthenticated": ([(TRACES, traces)] * 4 + [(LOGS, logs)] * 4, None),
        "authenticated": ([(TRACES, trace_export(24 * MIB, span)) for span in range(1, 9)], TOKEN),
        "one": ([(TRACES, trace_export(24 * MIB))], TOKEN),
        "http": ([(HTTP_TRACES, trace_export(24 * MIB, span)) for span in range(1, 9)], TOKEN),
    }


def run_case(name: str, calls: list[tuple[str, bytes]], token: str | None, reads: int | None) -> dict[str, Any]:
    http = calls[0][0] == HTTP_TRACES
    options: dict[str, Any] = {} if reads is None else {"max_concurrent_reads": reads}
    with temp_workdir("spanscore-bench-grpc-") as workdir:
        extra: dict[str, object] = {"collector": {"auth_tokens": [TOKEN], "http" if http else "grpc": options}}
        with ServiceProcess(Path(workdir), extra) as service:
            assert service.process is not None
            time.sleep(1.0)  # let start-up settle before the baseline
            started = time.perf_counter()
            with peak_growth(service.process.pid) as peak:
                statuses = asyncio.run(_all(service.http_port if http else service.grpc_port, calls, token))
            seconds = time.perf_counter() - started
    return {
        "case": name, "max_concurrent_reads": reads, "calls": len(calls),
        "message_mib": round(len(calls[0][1]) / MIB, 1), "statuses": sorted(set(statuses)),
        "seconds": round(seconds, 2), "peak_growth_mib": peak.growth_mib,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", action="append", choices=["unauthenticated", "authenticated", "one", "http"])
    parser.add_argument("--reads", action="append", type=int, help="the receiver's max_concurrent_reads (repeatable)")
    args = parser.parse_args()
    for name, (calls, token) in cases().items():
        if args.case and name not in args.case:
            continue
        for reads in args.reads or [None]:
            print(json.dumps(run_case(name, calls, token, reads)), flush=True)


if __name__ == "__main__":
    main()
