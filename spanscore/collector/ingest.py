"""The receivers' single entry point: decode an export request and hand rows to storage.

Both receivers (gRPC and HTTP) call ``export_traces`` / ``export_logs`` with a
parsed request; the result says how many items were rejected and why, for the
OTLP ``partial_success`` field. Errors propagate as ``RetryableError`` /
``PermanentError`` for ``status.py`` to map.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from spanscore.collector.decode import logs_from_request, spans_from_request
from spanscore.collector.limits import LimitCounters, LimitsConfig, apply_limits
from spanscore.collector.model import LogRecord, SpanRecord
from spanscore.pipeline import Consumer


@dataclass(frozen=True, slots=True)
class ExportOutcome:
    accepted: int
    rejected: int
    error_message: str


class Ingest:
    def __init__(
        self,
        spans: Consumer[Sequence[SpanRecord]],
        logs: Consumer[Sequence[LogRecord]],
        passthrough: Consumer[ExportTraceServiceRequest] | None = None,
        limits: LimitsConfig | None = None,
    ) -> None:
        self._limits = limits or LimitsConfig()
        self.limit_counters = LimitCounters()
        self._passthrough = passthrough
        self._spans = spans
        self._logs = logs
        self.received_spans = 0
        self.rejected_spans = 0

    async def export_traces(self, request: ExportTraceServiceRequest) -> ExportOutcome:
        decoded = spans_from_request(request)
        spans = apply_limits(decoded.items, self._limits, self.limit_counters)
        self.rejected_spans += decoded.rejected
        await self._spans.consume(spans)
        self.received_spans += len(decoded.items)
        if self._passthrough is not None:
            await self._passthrough.consume(request)
        return ExportOutcome(len(decoded.items), decoded.rejected, decoded.error_message)

    async def export_logs(self, request: ExportLogsServiceRequest) -> ExportOutcome:
        decoded = logs_from_request(request)
        await self._logs.consume(decoded.items)
        return ExportOutcome(len(decoded.items), decoded.rejected, decoded.error_message)
