"""OTLP/gRPC receiver: TraceService/Export and LogsService/Export on grpc.aio.

The handlers receive raw bytes, authenticate, call ``Ingest`` (which parses, off
the event loop when large) and translate its outcome; decoding and storage live
elsewhere. Oversize messages are refused by grpcio
itself (RESOURCE_EXHAUSTED) through ``max_receive_message_length``.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from spanscore.collector.ingest import Ingest
from spanscore.config import GrpcReceiverConfig
from spanscore.server.auth import TokenCheck
from spanscore.server.wire import classify, grpc_trailers

log = logging.getLogger(__name__)


def _authorization(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key.lower() == "authorization":
            return value if isinstance(value, str) else value.decode("utf-8", "replace")
    return None


async def _fail(context: grpc.aio.ServicerContext[Any, Any], exc: BaseException) -> None:
    error = classify(exc)
    await context.abort(error.grpc_code, error.message, trailing_metadata=grpc_trailers(error))


class _ExportHandler:
    """One Export method that receives the request as raw bytes.

    Registered without a request deserializer, so grpcio does not parse the message before we see it: the
    token is checked first, a message that does not parse is INVALID_ARGUMENT with the parser's reason
    (grpcio's own deserializer failure is UNKNOWN), and parsing a large message runs off the event loop.
    """

    def __init__(self, ingest: Ingest, tokens: TokenCheck, logs: bool) -> None:
        self._ingest = ingest
        self._tokens = tokens
        self._logs = logs

    async def export(self, body: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        response: Message
        try:
            self._tokens.verify(_authorization(context))
            if self._logs:
                outcome = await self._ingest.export_log_body(body, json_body=False)
                response = logs_service_pb2.ExportLogsServiceResponse()
                if outcome.rejected:
                    response.partial_success.rejected_log_records = outcome.rejected
                    response.partial_success.error_message = outcome.error_message
            else:
                outcome = await self._ingest.export_trace_body(body, json_body=False)
                response = trace_service_pb2.ExportTraceServiceResponse()
                if outcome.rejected:
                    response.partial_success.rejected_spans = outcome.rejected
                    response.partial_success.error_message = outcome.error_message
        except Exception as exc:
            await _fail(context, exc)
            raise AssertionError("unreachable: context.abort raises") from exc
        return response


def _register(server: grpc.aio.Server, ingest: Ingest, tokens: TokenCheck) -> None:
    def export(handler: _ExportHandler) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(
            handler.export, request_deserializer=None, response_serializer=lambda message: message.SerializeToString()
        )

    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "opentelemetry.proto.collector.trace.v1.TraceService",
                {"Export": export(_ExportHandler(ingest, tokens, logs=False))},
            ),
            grpc.method_handlers_generic_handler(
                "opentelemetry.proto.collector.logs.v1.LogsService",
                {"Export": export(_ExportHandler(ingest, tokens, logs=True))},
            ),
        )
    )


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
        _register(server, self._ingest, self._tokens)
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
