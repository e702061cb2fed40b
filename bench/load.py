"""The load generator: runs in its own process and sends pre-encoded requests.

``run_load`` is the process entry point (picklable arguments, plain dict
result). Several threads each keep one request in flight, over one shared gRPC
channel (raw unary call, bytes in and out) or one keep-alive HTTP connection
per thread. Every loop stops at the first of a request count and a deadline.
With ``rate`` set, request ``i`` is not sent before ``start + i / rate``
(open-loop pacing), for latency at a fixed fraction of the sustained rate.
"""

from __future__ import annotations

import http.client
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import grpc

from bench.payloads import Template, build_template

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
REQUEST_TIMEOUT_S = 30.0


@dataclass(slots=True)
class LoadSpec:
    transport: str  # "grpc" or "http"
    port: int
    spans_per_request: int
    llm: bool
    seconds: float
    max_requests: int
    concurrency: int = 8
    rate: float | None = None  # requests per second; None = as fast as acknowledgements allow
    warmup_requests: int = 4
    sequence_base: int = 0  # distinct trace ids across runs against one store


@dataclass(slots=True)
class LoadResult:
    acked_requests: int = 0
    acked_spans: int = 0
    failed_requests: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    request_bytes: int = 0
    next_sequence: int = 0
    total_acked_spans: int = 0  # warm-up included: what the store must hold afterwards


Sender = Callable[[bytes], str]  # returns "" on acknowledgement, else a short failure reason


def _grpc_sender(channel: grpc.Channel) -> Sender:
    call = channel.unary_unary(EXPORT_METHOD, request_serializer=None, response_deserializer=None)

    def send(body: bytes) -> str:
        try:
            call(body, timeout=REQUEST_TIMEOUT_S)
        except grpc.RpcError as exc:
            return f"grpc {exc.code().name}"
        return ""

    return send


def _http_sender(port: int) -> Sender:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    headers = {"Content-Type": "application/x-protobuf"}

    def send(body: bytes) -> str:
        nonlocal connection
        try:
            connection.request("POST", "/v1/traces", body=body, headers=headers)
            response = connection.getresponse()
            response.read()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
            return f"http {type(exc).__name__}"
        return "" if response.status == 200 else f"http {response.status}"

    return send


def run_load(spec_dict: dict[str, object]) -> dict[str, object]:
    """Process entry point: build the payload, warm up, then send until count or deadline."""
    spec = LoadSpec(**spec_dict)  # type: ignore[arg-type]
    template = build_template(spec.spans_per_request, spec.llm)
    channel = None
    if spec.transport == "grpc":
        channel = grpc.insecure_channel(f"127.0.0.1:{spec.port}", options=[("grpc.max_send_message_length", -1)])
        senders = [_grpc_sender(channel) for _ in range(spec.concurrency)]
    else:
        senders = [_http_sender(spec.port) for _ in range(spec.concurrency)]
    sequence = itertools.count(spec.sequence_base)
    result = LoadResult(request_bytes=len(template.body))
    warmup_spans = 0
    for index in range(spec.warmup_requests):
        reason = senders[index % len(senders)](template.encode(next(sequence)))
        if reason:
            result.failures[f"warmup {reason}"] = result.failures.get(f"warmup {reason}", 0) + 1
        else:
            warmup_spans += template.spans
    _timed_phase(spec, template, senders, sequence, result)
    result.next_sequence = next(sequence)
    result.total_acked_spans = warmup_spans + result.acked_spans
    if channel is not None:
        channel.close()
    return asdict(result)


def _timed_phase(
    spec: LoadSpec, template: Template, senders: list[Sender], sequence: Iterator[int], result: LoadResult
) -> None:
    lock = threading.Lock()
    issued = itertools.count()
    start = time.perf_counter()
    deadline = start + spec.seconds
    measured = LoadResult()

    def worker(send: Sender) -> None:
        while True:
            with lock:
                index = next(issued)
                seq = next(sequence)
            if index >= spec.max_requests:
                return
            if spec.rate:
                due = start + index / spec.rate
                pause = due - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
            if time.perf_counter() >= deadline:
                return
            body = template.encode(seq)
            sent = time.perf_counter()
            reason = send(body)
            latency_ms = (time.perf_counter() - sent) * 1000
            with lock:
                if reason:
                    measured.failed_requests += 1
                    measured.failures[reason] = measured.failures.get(reason, 0) + 1
                else:
                    measured.acked_requests += 1
                    measured.acked_spans += template.spans
                    measured.latencies_ms.append(latency_ms)

    threads = [threading.Thread(target=worker, args=(send,), daemon=True) for send in senders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=spec.seconds + REQUEST_TIMEOUT_S + 5)
    result.elapsed_s = time.perf_counter() - start
    result.acked_requests = measured.acked_requests
    result.acked_spans = measured.acked_spans
    result.failed_requests = measured.failed_requests
    result.failures.update(measured.failures)
    result.latencies_ms = measured.latencies_ms


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile; 0 without samples."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def load_summary(raw: dict[str, Any]) -> dict[str, Any]:
    """``run_load``'s result with its latency list replaced by rates and ack p50 / p99."""
    latencies = raw.pop("latencies_ms")
    raw["spans_per_s"] = raw["acked_spans"] / raw["elapsed_s"] if raw["elapsed_s"] else 0.0
    raw["requests_per_s"] = raw["acked_requests"] / raw["elapsed_s"] if raw["elapsed_s"] else 0.0
    raw["ack_p50_ms"] = percentile(latencies, 0.50)
    raw["ack_p99_ms"] = percentile(latencies, 0.99)
    return raw
