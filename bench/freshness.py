"""Span received -> queryable: send one span, poll the query API until it is counted.

The span goes out over gRPC (the ack already means stored, docs/receivers.md "An OK means
stored"); the clock starts before the send, so the figure includes the
acknowledgement. Polls run at a steady modest rate (every ``POLL_INTERVAL_S``),
each sample is bounded by ``SAMPLE_TIMEOUT_S`` (later counts as a timeout) and
the sending of samples by a deadline. If the deadline passes before any sample
was timed (a loaded machine), sampling goes on until one is, so the result
holds a sample unless the service is hung (``HANG_TIMEOUT_S``, which also
bounds each export).
"""

from __future__ import annotations

import time
from typing import Any

import grpc

from bench.load import EXPORT_METHOD
from bench.payloads import build_request
from bench.service import HANG_TIMEOUT_S, ServiceProcess, more_samples

POLL_INTERVAL_S = 0.05
SAMPLE_TIMEOUT_S = 10.0


def received_to_queryable(service: ServiceProcess, samples: int, seconds: float) -> dict[str, Any]:
    """Seconds from send to first successful count, one sample per span; timeouts are counted apart."""
    channel = grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}")
    export = channel.unary_unary(EXPORT_METHOD, request_serializer=None, response_deserializer=None)
    latencies: list[float] = []
    timeouts = 0
    begun = time.monotonic()
    sent = 0
    try:
        while (sent < samples or not latencies) and more_samples(begun, seconds, len(latencies)):
            sent += 1
            request = build_request(1, False, service="bench-freshness")[0]
            span_id = request.resource_spans[0].scope_spans[0].spans[0].span_id.hex()
            sql = f"SELECT count() AS n FROM otel_traces WHERE SpanId = '{span_id}'"
            started = time.perf_counter()
            export(request.SerializeToString(), timeout=HANG_TIMEOUT_S)
            found = _poll_until_counted(service, sql, started + SAMPLE_TIMEOUT_S)
            if found is None:
                timeouts += 1
            else:
                latencies.append(found - started)
            time.sleep(POLL_INTERVAL_S * 2)
    finally:
        channel.close()
    return {"latencies_s": latencies, "timeouts": timeouts}


def _poll_until_counted(service: ServiceProcess, sql: str, give_up: float) -> float | None:
    while time.perf_counter() < give_up:
        rows = service.query(sql)
        if rows and int(str(rows[0]["n"])) > 0:
            return time.perf_counter()
        time.sleep(POLL_INTERVAL_S)
    return None
