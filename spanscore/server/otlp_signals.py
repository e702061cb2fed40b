"""The three OTLP signals both receivers take (traces, logs, metrics): where each arrives and how it is answered.

The gRPC and HTTP receivers differ in transport only. What differs between signals (the gRPC service, the HTTP
path, the ``Ingest`` entry point, the response message and its partial-success field) is declared once here,
so a receiver has one export handler for all three and a signal cannot be wired on one transport and not the
other.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from spanscore.collector.ingest import ExportOutcome, Ingest

Export = Callable[..., Coroutine[Any, Any, ExportOutcome]]


@dataclass(frozen=True, slots=True)
class Signal:
    grpc_service: str
    http_path: str
    response_type: type[Message]
    rejected_field: str
    """The ``partial_success`` field that counts what was refused (spans, log records, data points)."""
    entry: Callable[[Ingest], Export]

    def export(self, ingest: Ingest) -> Export:
        """The ``Ingest`` method this signal's bodies go to: ``(body, *, json_body, decoded_hook=None)``."""
        return self.entry(ingest)

    def response(self, outcome: ExportOutcome) -> Message:
        """The OTLP export response, with ``partial_success`` when something was refused."""
        response: Any = self.response_type()
        if outcome.rejected:
            setattr(response.partial_success, self.rejected_field, outcome.rejected)
            response.partial_success.error_message = outcome.error_message
        message: Message = response
        return message


SIGNALS = (
    Signal(
        "opentelemetry.proto.collector.trace.v1.TraceService",
        "/v1/traces",
        ExportTraceServiceResponse,
        "rejected_spans",
        lambda ingest: ingest.export_trace_body,
    ),
    Signal(
        "opentelemetry.proto.collector.logs.v1.LogsService",
        "/v1/logs",
        ExportLogsServiceResponse,
        "rejected_log_records",
        lambda ingest: ingest.export_log_body,
    ),
    Signal(
        "opentelemetry.proto.collector.metrics.v1.MetricsService",
        "/v1/metrics",
        ExportMetricsServiceResponse,
        "rejected_data_points",
        lambda ingest: ingest.export_metric_body,
    ),
)
