"""Load generator for the overload test: a separate process offering a multiple of what spanscore absorbs.

Run as ``python -m tests.e2e.overload_load '<json spec>'``; prints one JSON
object (the outcome of every request) on stdout. Requests are pre-encoded
(``bench.payloads``: one serialised template, trace ids patched per request)
and alternate between OTLP/gRPC (raw unary call, bytes in and out) and
OTLP/HTTP protobuf, both over loopback.

Three phases, each bounded by a request count and a deadline:

* warm-up: a closed loop, not measured;
* calibrate: a closed loop with ``calibrate_concurrency`` requests in flight
  measures what the service absorbs (acknowledged spans per second);
* overload: an open loop paced at ``factor`` times that rate, re-aimed every
  second at ``factor`` times what was acknowledged lately. In-flight
  requests are capped (``max_in_flight``), as real exporters cap theirs; when
  the cap is reached the pacer waits, and the offered rate it achieved is
  reported rather than assumed.

Every answer is classified: ``ok``; ``backpressure`` (gRPC UNAVAILABLE or
RESOURCE_EXHAUSTED, HTTP 429 or 503) together with whether it carried a
usable retry hint (gRPC ``google.rpc.retryinfo-bin`` trailer with a positive
delay, HTTP ``Retry-After`` of at least one second); or ``other`` (anything
else, timeouts included). Nothing is retried: each sequence number is sent
once, so stored rows map back to exactly one request.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import grpc
from google.rpc import error_details_pb2

from bench.payloads import Template, build_template

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
BACKPRESSURE_GRPC = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED}
BACKPRESSURE_HTTP = {429, 503}


@dataclass
class Spec:
    grpc_port: int
    http_port: int
    spans_per_request: int = 200
    warmup_s: float = 3.0
    calibrate_s: float = 4.0
    calibrate_concurrency: int = 100
    overload_s: float = 60.0
    factor: float = 2.0
    max_in_flight: int = 1000
    grpc_channels: int = 8
    protocols: str = "both"  # "grpc", "http" or "both" (alternating)
    max_requests: int = 20_000
    request_timeout_s: float = 60.0


@dataclass
class Outcome:
    """What one phase saw; ``acked`` holds the sequence numbers of acknowledged requests."""

    requests: int = 0
    acked: list[int] = field(default_factory=list)
    backpressure: Counter[str] = field(default_factory=Counter)
    backpressure_without_hint: Counter[str] = field(default_factory=Counter)
    retry_hints_s: list[float] = field(default_factory=list)
    other: Counter[str] = field(default_factory=Counter)
    elapsed_s: float = 0.0
    waited_for_slot: int = 0
    rates: list[int] = field(default_factory=list)


class Load:
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.template: Template = build_template(spec.spans_per_request, llm=False)
        self._sequence = 0
        # One channel per simulated exporter: a single HTTP/2 connection would queue calls in the client
        # beyond its stream limit, hiding the overload from the server.
        self._channels = [
            grpc.aio.insecure_channel(
                f"127.0.0.1:{spec.grpc_port}",
                options=[("grpc.max_send_message_length", -1), ("grpc.use_local_subchannel_pool", 1)],
            )
            for _ in range(spec.grpc_channels)
        ]
        self._calls = [
            channel.unary_unary(EXPORT_METHOD, request_serializer=None, response_deserializer=None)
            for channel in self._channels
        ]
        self._session: aiohttp.ClientSession | None = None
        self._http_url = f"http://127.0.0.1:{spec.http_port}/v1/traces"

    async def __aenter__(self) -> Load:
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self.spec.max_in_flight))
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._session is not None
        await self._session.close()
        for channel in self._channels:
            await channel.close()

    def next_sequence(self) -> int:
        self._sequence += 1
        return self._sequence

    async def send(self, sequence: int, outcome: Outcome) -> None:
        """Send request ``sequence`` once and record its answer."""
        body = self.template.encode(sequence)
        outcome.requests += 1
        use_grpc = self.spec.protocols == "grpc" or (self.spec.protocols == "both" and sequence % 2 == 1)
        if use_grpc:
            await self._send_grpc(sequence, body, outcome)
        else:
            await self._send_http(sequence, body, outcome)

    async def _send_grpc(self, sequence: int, body: bytes, outcome: Outcome) -> None:
        try:
            call = self._calls[(sequence // 2) % len(self._calls)]
            await call(body, timeout=self.spec.request_timeout_s)
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
            if code not in BACKPRESSURE_GRPC:
                outcome.other[f"grpc {code.name}"] += 1
                return
            outcome.backpressure[f"grpc {code.name}"] += 1
            hint = _grpc_retry_delay(exc.trailing_metadata())
            if hint is None or hint <= 0:
                outcome.backpressure_without_hint[f"grpc {code.name}"] += 1
            else:
                outcome.retry_hints_s.append(hint)
            return
        outcome.acked.append(sequence)

    async def _send_http(self, sequence: int, body: bytes, outcome: Outcome) -> None:
        assert self._session is not None
        try:
            async with self._session.post(
                self._http_url,
                data=body,
                headers={"Content-Type": "application/x-protobuf"},
                timeout=aiohttp.ClientTimeout(total=self.spec.request_timeout_s),
            ) as response:
                await response.read()
                status, retry_after = response.status, response.headers.get("Retry-After")
        except (aiohttp.ClientError, TimeoutError) as exc:
            outcome.other[f"http {type(exc).__name__}"] += 1
            return
        if status == 200:
            outcome.acked.append(sequence)
            return
        if status not in BACKPRESSURE_HTTP:
            outcome.other[f"http {status}"] += 1
            return
        outcome.backpressure[f"http {status}"] += 1
        if retry_after is None or not retry_after.isdigit() or int(retry_after) < 1:
            outcome.backpressure_without_hint[f"http {status}"] += 1
        else:
            outcome.retry_hints_s.append(float(retry_after))

    async def closed_loop(self, seconds: float, concurrency: int, max_requests: int) -> Outcome:
        outcome = Outcome()
        started = time.monotonic()
        deadline = started + seconds

        async def worker() -> None:
            while time.monotonic() < deadline and outcome.requests < max_requests:
                await self.send(self.next_sequence(), outcome)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        outcome.elapsed_s = time.monotonic() - started
        return outcome

    async def open_loop(self, seconds: float, rate_per_s: float, max_requests: int) -> Outcome:
        """Paced sends at ``factor`` times the acknowledged rate, at most ``max_in_flight`` outstanding.

        The rate starts at ``rate_per_s`` and is re-aimed every second at ``factor`` times what was acknowledged
        over the last two seconds (never below the start rate), so the offer follows what the service really
        absorbs under load instead of trusting the calibration alone.
        """
        outcome = Outcome()
        slots = asyncio.Semaphore(self.spec.max_in_flight)
        tasks: set[asyncio.Task[None]] = set()
        acked_at: deque[float] = deque()
        started = time.monotonic()
        deadline = started + seconds
        rate, next_due, next_aim = rate_per_s, started, started + 1.0

        async def one(sequence: int) -> None:
            try:
                acked_before = len(outcome.acked)
                await self.send(sequence, outcome)
                if len(outcome.acked) > acked_before:
                    acked_at.append(time.monotonic())
            finally:
                slots.release()

        for _ in range(max_requests):
            now = time.monotonic()
            if now >= deadline or next_due >= deadline:
                break
            if now >= next_aim:
                while acked_at and acked_at[0] < now - 2.0:
                    acked_at.popleft()
                rate = max(rate_per_s, self.spec.factor * len(acked_at) / 2.0)
                outcome.rates.append(round(rate * self.spec.spans_per_request))
                next_aim = now + 1.0
            if next_due > now:
                await asyncio.sleep(next_due - now)
            next_due += 1.0 / rate
            if slots.locked():
                outcome.waited_for_slot += 1
            await slots.acquire()
            task = asyncio.create_task(one(self.next_sequence()))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        outcome.elapsed_s = time.monotonic() - started
        if tasks:
            await asyncio.wait(set(tasks), timeout=self.spec.request_timeout_s + 5)
        return outcome


def _grpc_retry_delay(metadata: Any) -> float | None:
    for key, value in metadata or ():
        if key == "google.rpc.retryinfo-bin":
            info = error_details_pb2.RetryInfo.FromString(value)
            return float(info.retry_delay.seconds + info.retry_delay.nanos / 1e9)
    return None


def _summary(outcome: Outcome, spans_per_request: int) -> dict[str, Any]:
    data: dict[str, Any] = {
        "requests": outcome.requests,
        "acked": outcome.acked,
        "backpressure": dict(outcome.backpressure),
        "backpressure_without_hint": dict(outcome.backpressure_without_hint),
        "other": dict(outcome.other),
        "elapsed_s": outcome.elapsed_s,
        "waited_for_slot": outcome.waited_for_slot,
        "target_spans_per_s_by_second": outcome.rates,
    }
    data["acked_spans"] = len(outcome.acked) * spans_per_request
    data["offered_spans_per_s"] = outcome.requests * spans_per_request / max(outcome.elapsed_s, 1e-9)
    data["acked_spans_per_s"] = data["acked_spans"] / max(outcome.elapsed_s, 1e-9)
    data["retry_hints_s"] = sorted(set(outcome.retry_hints_s))
    return data


async def run(spec: Spec) -> dict[str, Any]:
    async with Load(spec) as load:
        # The first seconds are slower (connections, allocator, the engine's first parts): not counted.
        warmup = await load.closed_loop(spec.warmup_s, spec.calibrate_concurrency, spec.max_requests)
        budget = spec.max_requests - warmup.requests
        calibration = await load.closed_loop(spec.calibrate_s, spec.calibrate_concurrency, budget)
        absorbed = len(calibration.acked) * spec.spans_per_request / max(calibration.elapsed_s, 1e-9)
        rate = max(1.0, spec.factor * absorbed / spec.spans_per_request)
        budget = max(0, budget - calibration.requests)
        overload = await load.open_loop(spec.overload_s, rate, budget)
    return {
        "spans_per_request": spec.spans_per_request,
        "absorbed_spans_per_s": absorbed,
        "target_spans_per_s": rate * spec.spans_per_request,
        "phases": {
            "warmup": _summary(warmup, spec.spans_per_request),
            "calibration": _summary(calibration, spec.spans_per_request),
            "overload": _summary(overload, spec.spans_per_request),
        },
    }


def main() -> int:
    spec = Spec(**json.loads(sys.argv[1]))
    print(json.dumps(asyncio.run(run(spec))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
