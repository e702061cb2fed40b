"""OTLP/gRPC receiver: TraceService/Export and LogsService/Export on grpc.aio.

The servicers only authenticate, call ``Ingest`` and translate its outcome;
decoding and storage live elsewhere. Oversize messages are refused by grpcio
itself (RESOURCE_EXHAUSTED) through ``max_receive_message_length``.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from spanscore.collector.auth import TokenCheck
from spanscore.collector.ingest import Ingest
from spanscore.collector.status import classify, grpc_trailers
from spanscore.config import GrpcReceiverConfig

log = logging.getLogger(__name__)


def _authorization(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key.lower() == "authorization":
            return value if isinstance(value, str) else value.decode("utf-8", "replace")
    return None


async def _fail(context: grpc.aio.ServicerContext[Any, Any], exc: BaseException) -> None:
    error = classify(exc)
    await context.abort(error.grpc_code, error.message, trailing_metadata=grpc_trailers(error))


class _TraceServicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, ingest: Ingest, tokens: TokenCheck) -> None:
        self._ingest = ingest
        self._tokens = tokens

    async def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        response = trace_service_pb2.ExportTraceServiceResponse()
        try:
            self._tokens.verify(_authorization(context))
            outcome = await self._ingest.export_traces(request)
        except Exception as exc:
            await _fail(context, exc)
            return response
        if outcome.rejected:
            response.partial_success.rejected_spans = outcome.rejected
            response.partial_success.error_message = outcome.error_message
        return response


class _LogsServicer(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, ingest: Ingest, tokens: TokenCheck) -> None:
        self._ingest = ingest
        self._tokens = tokens

    async def Export(
        self, request: logs_service_pb2.ExportLogsServiceRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> logs_service_pb2.ExportLogsServiceResponse:
        response = logs_service_pb2.ExportLogsServiceResponse()
        try:
            self._tokens.verify(_authorization(context))
            outcome = await self._ingest.export_logs(request)
        except Exception as exc:
            await _fail(context, exc)
            return response
        if outcome.rejected:
            response.partial_success.rejected_log_records = outcome.rejected
            response.partial_success.error_message = outcome.error_message
        return response


def _register(server: grpc.aio.Server, traces: _TraceServicer, logs: _LogsServicer) -> None:
    # The generated registration helpers are untyped; this is the one place that calls them.
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(traces, server)  # type: ignore[no-untyped-call]
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(logs, server)  # type: ignore[no-untyped-call]


class GrpcReceiver:
    def __init__(self, config: GrpcReceiverConfig, ingest: Ingest, tokens: TokenCheck) -> None:
        self._config = config
        self._ingest = ingest
        self._tokens = tokens
        self._server: grpc.aio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        options = [
            ("grpc.max_receive_message_length", self._config.max_message_bytes),
            ("grpc.so_reuseport", 0),
        ]
        server = grpc.aio.server(options=options)
        _register(server, _TraceServicer(self._ingest, self._tokens), _LogsServicer(self._ingest, self._tokens))
        address = f"{self._config.host}:{self._config.port}"
        if self._config.tls is not None:
            credentials = grpc.ssl_server_credentials(
                [(self._config.tls.key_file.read_bytes(), self._config.tls.cert_file.read_bytes())]
            )
            self.port = server.add_secure_port(address, credentials)
        else:
            self.port = server.add_insecure_port(address)
        if self.port == 0:
            raise OSError(f"collector.grpc: cannot bind {address}")
        await server.start()
        self._server = server
        log.info("OTLP/gRPC receiver listening address=%s:%d", self._config.host, self.port)

    async def shutdown(self, grace: float = 10.0) -> None:
        """Stop accepting; in-flight exports get ``grace`` seconds to finish (they wait for storage)."""
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
