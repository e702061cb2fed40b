"""The receivers' single entry point: decode an export request and hand rows to storage.

Both receivers (gRPC and HTTP) call ``export_trace_body`` / ``export_log_body`` / ``export_metric_body`` with
the raw request bytes. Parsing, row building and limits run on the event loop only for small bodies; larger
ones go to a worker thread (``decode_pool``), and large OTLP/JSON bodies are first turned into protobuf in a
worker process (``json_pool``), so one big export cannot hold every listener still while it is decoded. A
protobuf body over 1 MiB is parsed a piece at a time (``export_chunks``), so the parser never holds more than
one piece. The result says how many items were rejected and why, for the OTLP ``partial_success`` field.
Errors propagate as ``RetryableError`` / ``PermanentError`` for ``status.py`` to map.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from spanscore.collector.bounds import DecodeBounds
from spanscore.collector.decode import Decoded, logs_from_request, parse_logs, parse_traces, spans_from_request
from spanscore.collector.decode_budget import check_json
from spanscore.collector.export_chunks import split_export
from spanscore.collector.limits import LimitCounters, Limiter, LimitsConfig, apply_limits, apply_log_limits
from spanscore.collector.metrics_decode import check_point_count, metrics_from_request, parse_metrics
from spanscore.collector.otlp_json import otlp_json_to_protobuf
from spanscore.collector.redaction import IngestRedaction
from spanscore.pipeline import Consumer
from spanscore.records import LogRecord, SpanRecord
from spanscore.storage.metric_rows import MetricPoint

T = TypeVar("T")
M = TypeVar("M")

INLINE_DECODE_BYTES = 64 << 10
"""Bodies up to this size are decoded on the event loop (well under a millisecond); larger ones in a thread."""


class DecodeWorkers:
    """Where large exports are decoded, off the event loop: one thread, and one process for OTLP/JSON.

    Made on first use (most services never see a body large enough) and stopped with the service.
    """

    def __init__(self) -> None:
        self._thread: ThreadPoolExecutor | None = None
        self._process: ProcessPoolExecutor | None = None

    def thread(self) -> ThreadPoolExecutor:
        """One decode thread: large requests are decoded one after another, never on the loop."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="otlp-decode")
        return self._thread

    def process(self) -> ProcessPoolExecutor:
        """One worker process that turns large OTLP/JSON bodies into protobuf bytes.

        Spawned, not forked: the service holds gRPC and storage threads that a fork would copy mid-state.
        """
        if self._process is None:
            self._process = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_lower_priority
            )
        return self._process

    def close(self) -> None:
        thread, process, self._thread, self._process = self._thread, self._process, None, None
        if thread is not None:
            thread.shutdown(wait=True)
        if process is not None:
            process.shutdown(wait=True, cancel_futures=True)

    async def as_protobuf(self, body: bytes, json_body: bool, signal: str) -> tuple[bytes, bool]:
        """Large OTLP/JSON bodies become protobuf in the worker process; everything else is returned as is."""
        if not json_body or len(body) <= INLINE_DECODE_BYTES:
            return body, json_body
        check_json(body)  # a body refused for its object count costs no worker process
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.process(), otlp_json_to_protobuf, body, signal), False

    async def off_loop(self, size: int, work: Callable[[], T]) -> T:
        if size <= INLINE_DECODE_BYTES:
            return work()
        return await asyncio.get_running_loop().run_in_executor(self.thread(), work)


def _lower_priority() -> None:
    """The worker converts bulk JSON: when the cores are busy, the listeners' threads go first."""
    os.nice(10)


@dataclass(frozen=True, slots=True)
class ExportOutcome:
    accepted: int
    rejected: int
    error_message: str


@dataclass(frozen=True, slots=True)
class _DecodedTraces:
    requests: list[ExportTraceServiceRequest]
    """The parsed request (its pieces, for a large one), kept only for pass-through forwarding."""
    spans: list[SpanRecord]
    rejected: int
    error_message: str


def _parsed(body: bytes, json_body: bool, parse: Callable[..., M], request_type: Any, out: Decoded[Any]) -> Iterator[M]:
    """The request, parsed whole, or a piece at a time when large (``export_chunks``); refusals go to ``out``.

    Each piece is parsed only when the previous one's rows are built, so the parser holds one piece at most.
    """
    split = None if json_body else split_export(body, request_type.DESCRIPTOR)
    if split is None:
        yield parse(body, json_body=json_body)
        return
    out.reject(split.rejected, split.error_message)
    pieces = split.pieces[::-1]
    split.pieces.clear()
    while pieces:
        yield parse(pieces.pop(), json_body=False)


class Ingest:
    def __init__(
        self,
        spans: Consumer[Sequence[SpanRecord]],
        logs: Consumer[Sequence[LogRecord]],
        passthrough: Consumer[ExportTraceServiceRequest] | None = None,
        limits: LimitsConfig | None = None,
        redaction: IngestRedaction | None = None,
        *,
        metrics: Consumer[Sequence[MetricPoint]],
    ) -> None:
        self._limits = limits or LimitsConfig()
        self.redaction = redaction
        """``collector.redact``: masks values before they are spooled or stored (None: stored as sent)."""
        self.limit_counters = LimitCounters()
        self._passthrough = passthrough
        self._spans = spans
        self._logs = logs
        self._metrics = metrics
        self.received_spans = 0
        self.rejected_spans = 0
        self.workers = DecodeWorkers()

    def _decode_traces(self, body: bytes, json_body: bool) -> _DecodedTraces:
        bounds = DecodeBounds(self._limits)
        decoded: Decoded[SpanRecord] = Decoded([])
        requests = []
        for request in _parsed(body, json_body, parse_traces, ExportTraceServiceRequest, decoded):
            part = spans_from_request(request, bounds)
            decoded.items.extend(part.items)
            decoded.reject(part.rejected, part.error_message)
            if self._passthrough is not None:
                requests.append(request)
        spans = apply_limits(decoded.items, self._limits, self.limit_counters)
        if self.redaction is not None:
            spans = self.redaction.spans(spans)
        self.limit_counters.add_decode_drops(bounds)
        return _DecodedTraces(requests, spans, decoded.rejected, decoded.error_message)

    async def export_trace_body(
        self, body: bytes, *, json_body: bool, decoded_hook: Callable[[], None] | None = None
    ) -> ExportOutcome:
        """Parse, limit and store one trace export given as protobuf or OTLP/JSON bytes.

        ``decoded_hook`` is called once the body is decoded and no longer held, before storage is waited for.
        """
        decoded = await self._decode(body, json_body, "traces", self._decode_traces)
        del body  # the rows are built: the request's bytes need not wait for storage
        if decoded_hook is not None:
            decoded_hook()
        return await self._store_traces(decoded)

    async def _decode(self, body: bytes, json_body: bool, signal: str, rows: Callable[[bytes, bool], T]) -> T:
        body, json_body = await self.workers.as_protobuf(body, json_body, signal)
        return await self.workers.off_loop(len(body), lambda: rows(body, json_body))

    async def _store_traces(self, decoded: _DecodedTraces) -> ExportOutcome:
        self.rejected_spans += decoded.rejected
        await self._spans.consume(decoded.spans)
        self.received_spans += len(decoded.spans)
        if self._passthrough is not None:
            for request in decoded.requests:
                await self._passthrough.consume(request)
        return ExportOutcome(len(decoded.spans), decoded.rejected, decoded.error_message)

    def _decode_logs(self, body: bytes, json_body: bool) -> tuple[list[LogRecord], int, str]:
        bounds = DecodeBounds(self._limits)
        decoded: Decoded[LogRecord] = Decoded([])
        for request in _parsed(body, json_body, parse_logs, ExportLogsServiceRequest, decoded):
            part = logs_from_request(request, bounds)
            decoded.items.extend(part.items)
            decoded.reject(part.rejected, part.error_message)
        records = apply_log_limits(decoded.items, self._limits, self.limit_counters)
        if self.redaction is not None:
            records = self.redaction.logs(records)
        return records, decoded.rejected, decoded.error_message

    async def export_log_body(
        self, body: bytes, *, json_body: bool, decoded_hook: Callable[[], None] | None = None
    ) -> ExportOutcome:
        """Parse, limit and store one log export given as protobuf or OTLP/JSON bytes (``decoded_hook``: as above)."""
        records, rejected, message = await self._decode(body, json_body, "logs", self._decode_logs)
        del body
        if decoded_hook is not None:
            decoded_hook()
        await self._logs.consume(records)
        return ExportOutcome(len(records), rejected, message)

    def _decode_metrics(self, body: bytes, json_body: bool) -> Decoded[MetricPoint]:
        decoded = Decoded[MetricPoint]([])
        limiter = Limiter(self._limits, self.limit_counters)
        for request in _parsed(body, json_body, parse_metrics, ExportMetricsServiceRequest, decoded):
            part = metrics_from_request(request, limiter)
            decoded.items.extend(part.items)
            decoded.reject(part.rejected, part.error_message)
        check_point_count(len(decoded.items), self._limits)
        return decoded

    async def export_metric_body(
        self, body: bytes, *, json_body: bool, decoded_hook: Callable[[], None] | None = None
    ) -> ExportOutcome:
        """Parse, limit and store one metrics export (``decoded_hook``: as above); points, not metrics, count."""
        decoded = await self._decode(body, json_body, "metrics", self._decode_metrics)
        del body
        if decoded_hook is not None:
            decoded_hook()
        await self._metrics.consume(decoded.items)
        return ExportOutcome(len(decoded.items), decoded.rejected, decoded.error_message)
