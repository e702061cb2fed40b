"""OTLP out: scores to the user's existing backend, and received spans passed through unchanged.

Scores travel in one of two OpenTelemetry shapes, both carrying the scored
span's trace and span id so the backend shows them on that span:

- ``log``: a log record named ``gen_ai.evaluation.result`` in the scored span's context;
- ``span``: a short ``evaluation <scorer>`` span, child of the scored span, holding a
  ``gen_ai.evaluation.result`` event.

Both use the OpenTelemetry SDK's batch processors and OTLP exporters, so export
runs on the SDK's own thread with a bounded queue and never blocks the event
loop. Everything spanscore emits is tagged ``spanscore.internal=true`` so a
spanscore that receives it back never scores it. Span pass-through re-sends
each accepted export request as it was received.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import aiohttp
import grpc
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from pydantic import BaseModel, ConfigDict, Field

from spanscore.storage.scores import ScoreRow

log = logging.getLogger(__name__)

INTERNAL_ATTRIBUTE = "spanscore.internal"
EVALUATION_EVENT = "gen_ai.evaluation.result"


class ForwardConfig(BaseModel):
    """Where to send scores (and optionally the received spans) over OTLP."""

    model_config = ConfigDict(extra="forbid")

    endpoint: str
    """OTLP endpoint: `http://host:4318` for http/protobuf (paths /v1/traces and /v1/logs are added), `host:4317`
    for grpc."""
    protocol: Literal["http/protobuf", "grpc"] = "http/protobuf"
    headers: dict[str, str] = {}
    """Extra request headers, e.g. an Authorization header for the backend."""
    scores: Literal["log", "span", "none"] = "log"
    """How each score is exported: a log record in the scored span's context, or a child evaluation span."""
    spans: bool = False
    """Also forward every received span export unchanged (spanscore in front of an existing backend)."""
    judge_spans: bool = True
    """Export a span per LLM-judge call (model, tokens, output mode), tagged so no spanscore scores it."""
    insecure: bool = True
    """For grpc: plaintext (loopback, sidecars); set false for TLS."""
    timeout_s: float = Field(10.0, gt=0)
    max_in_flight: int = Field(64, ge=1)
    """Concurrent pass-through requests; beyond it forwarding waits (never an unbounded queue)."""


def _parent_context(trace_id: str, span_id: str) -> Any:
    parent = SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(1))
    return trace.set_span_in_context(NonRecordingSpan(parent))


def evaluation_attributes(row: ScoreRow) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.evaluation.name": row.scorer,
        "gen_ai.evaluation.score.label": row.label,
        "gen_ai.evaluation.explanation": row.reason,
        "spanscore.rule": row.rule,
        "spanscore.status": row.status,
        "spanscore.scorer.version": row.scorer_version,
        "spanscore.sample_rate": row.sample_rate,
        INTERNAL_ATTRIBUTE: True,
    }
    if row.score is not None:
        attributes["gen_ai.evaluation.score.value"] = row.score
    return attributes


class ScoreExporter:
    """Exports scores with the OTel SDK; ``export`` only enqueues."""

    def __init__(self, config: ForwardConfig, service_name: str = "spanscore") -> None:
        self._config = config
        resource = Resource.create({"service.name": service_name, INTERNAL_ATTRIBUTE: True})
        self._tracer_provider: TracerProvider | None = None
        self._logger_provider: LoggerProvider | None = None
        if config.scores == "span" or config.judge_spans:
            self._tracer_provider = TracerProvider(resource=resource)
            self._tracer_provider.add_span_processor(BatchSpanProcessor(self._span_exporter()))
            self._tracer = self._tracer_provider.get_tracer("spanscore.evaluation")
        if config.scores == "log":
            self._logger_provider = LoggerProvider(resource=resource)
            self._logger_provider.add_log_record_processor(BatchLogRecordProcessor(self._log_exporter()))
            self._logger = self._logger_provider.get_logger("spanscore.evaluation")

    def _span_exporter(self) -> Any:
        c = self._config
        if c.protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans

            return GrpcSpans(endpoint=c.endpoint, insecure=c.insecure, headers=c.headers, timeout=int(c.timeout_s))
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans

        return HttpSpans(endpoint=_http_url(c.endpoint, "/v1/traces"), headers=c.headers, timeout=c.timeout_s)

    def _log_exporter(self) -> Any:
        c = self._config
        if c.protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs

            return GrpcLogs(endpoint=c.endpoint, insecure=c.insecure, headers=c.headers, timeout=int(c.timeout_s))
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs

        return HttpLogs(endpoint=_http_url(c.endpoint, "/v1/logs"), headers=c.headers, timeout=c.timeout_s)

    async def consume(self, rows: Sequence[ScoreRow], /) -> None:
        """Enqueue the scores that have a value; a failed or skipped score stays in storage only."""
        for row in rows:
            if row.status == "ok":
                self.export(row)

    def export(self, row: ScoreRow) -> None:
        if not row.trace_id or not row.span_id:
            return
        context = _parent_context(row.trace_id, row.span_id)
        attributes = evaluation_attributes(row)
        if self._config.scores == "span":
            span = self._tracer.start_span(
                f"evaluation {row.scorer}", context=context, attributes={INTERNAL_ATTRIBUTE: True}
            )
            span.add_event(EVALUATION_EVENT, attributes)
            span.end()
        elif self._logger_provider is not None:
            self._logger.emit(context=context, event_name=EVALUATION_EVENT, attributes=attributes, body=row.reason)

    def judge_tracer(self) -> trace.Tracer | None:
        """The tracer judge calls report to, when judge spans are enabled."""
        return self._tracer if self._tracer_provider is not None and self._config.judge_spans else None

    def flush(self, timeout_s: float = 10.0) -> None:
        millis = int(timeout_s * 1000)
        if self._tracer_provider is not None:
            self._tracer_provider.force_flush(millis)
        if self._logger_provider is not None:
            self._logger_provider.force_flush(millis)

    def shutdown(self) -> None:
        if self._tracer_provider is not None:
            self._tracer_provider.shutdown()
        if self._logger_provider is not None:
            self._logger_provider.shutdown()


def _http_url(endpoint: str, path: str) -> str:
    base = endpoint if "://" in endpoint else f"http://{endpoint}"
    return base.rstrip("/") + path if not base.rstrip("/").endswith(path) else base


class SpanPassThrough:
    """Re-sends accepted trace exports unchanged; failures are logged and counted, never block ingest."""

    def __init__(self, config: ForwardConfig) -> None:
        self._config = config
        self._slots = asyncio.Semaphore(config.max_in_flight)
        self._session: aiohttp.ClientSession | None = None
        self._channel: grpc.aio.Channel | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.forwarded = 0
        self.failed = 0

    async def start(self) -> None:
        if self._config.protocol == "grpc":
            self._channel = (
                grpc.aio.insecure_channel(self._config.endpoint)
                if self._config.insecure
                else grpc.aio.secure_channel(self._config.endpoint, grpc.ssl_channel_credentials())
            )
        else:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self._config.timeout_s))

    async def consume(self, request: trace_service_pb2.ExportTraceServiceRequest, /) -> None:
        await self._slots.acquire()
        task = asyncio.create_task(self._send(request.SerializeToString()))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, body: bytes) -> None:
        try:
            if self._channel is not None:
                stub = trace_service_pb2_grpc.TraceServiceStub(self._channel)  # type: ignore[no-untyped-call]
                request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                await stub.Export(request, timeout=self._config.timeout_s, metadata=tuple(self._headers().items()))
            elif self._session is not None:
                headers = {"Content-Type": "application/x-protobuf", **self._config.headers}
                url = _http_url(self._config.endpoint, "/v1/traces")
                async with self._session.post(url, data=body, headers=headers, allow_redirects=False) as response:
                    if response.status >= 300:
                        raise RuntimeError(f"upstream answered {response.status}")
            self.forwarded += 1
        except Exception as exc:
            self.failed += 1
            log.warning("span pass-through failed endpoint=%s error=%s", self._config.endpoint, exc)
        finally:
            self._slots.release()

    def _headers(self) -> Mapping[str, str]:
        return {k.lower(): v for k, v in self._config.headers.items()}

    async def shutdown(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
