"""OTLP/gRPC receiver: TraceService, LogsService and MetricsService Export on grpc.aio.

The handlers authenticate from the call's metadata, then read the message as raw bytes in one of a few read
slots (``grpc_admission.py``: nothing of an unauthenticated message is read), call ``Ingest`` (which parses,
off the event loop when large) and translate its outcome; decoding and storage live elsewhere. Oversize
messages are refused by grpcio itself (RESOURCE_EXHAUSTED) through ``max_receive_message_length``; calls beyond
``max_concurrent_calls`` likewise, and one connection opens at most ``max_streams_per_connection`` streams.

The server runs on an event loop of its own, in its own thread. grpc.aio takes
new calls off grpc core's queue one at a time on its loop; sharing the service's
loop, which runs storage, run assembly and the HTTP listeners, it fell behind
under overload, and calls that waited 30 s in core's queue of unrequested calls
were answered CANCELLED, with no retry hint. On its own loop a call is taken at
once; its export then runs on the service's loop (``run_coroutine_threadsafe``),
where it is refused with a retry hint or stored, as before.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from spanscore.collector.ingest import Ingest
from spanscore.server.auth import TokenCheck, require_tokens_beyond_loopback
from spanscore.server.grpc_admission import ReadSlots, read_message
from spanscore.server.listeners_config import GrpcReceiverConfig
from spanscore.server.otlp_signals import SIGNALS, Signal
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


T = TypeVar("T")

OnServiceLoop = Callable[[Coroutine[Any, Any, T]], Awaitable[T]]
"""Runs a coroutine on the service's loop and gives an awaitable for the calling loop."""


def _run_in(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T]) -> Awaitable[T]:
    """Run ``coroutine`` on ``loop`` (another thread's) and await its result from the calling loop."""
    return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, loop))


class _ExportHandler:
    """One signal's Export method, which receives the request as raw bytes after the token check (``grpc_admission``).

    Registered as request-streaming without a deserializer: grpcio reads nothing of the message before the
    token is checked and a read slot is held, a message that does not parse is INVALID_ARGUMENT with the
    parser's reason (grpcio's own deserializer failure is UNKNOWN), and parsing a large message runs off the
    event loop. Traces, logs and metrics differ only in their ``Signal``.
    """

    def __init__(
        self, signal: Signal, ingest: Ingest, tokens: TokenCheck, on_service_loop: OnServiceLoop[Any], slots: ReadSlots
    ) -> None:
        self._signal = signal
        self._export = signal.export(ingest)
        self._tokens = tokens
        self._on_service_loop = on_service_loop
        self._slots = slots

    async def export(self, requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        try:
            self._tokens.verify(_authorization(context))
            async with self._slots.slot(context.time_remaining()) as release:
                export = self._export(await read_message(context), json_body=False, decoded_hook=release)
                return self._signal.response(await self._on_service_loop(export))
        except Exception as exc:
            await _fail(context, exc)
            raise AssertionError("unreachable: context.abort raises") from exc


def _register(
    server: grpc.aio.Server, ingest: Ingest, tokens: TokenCheck, on_service_loop: OnServiceLoop[Any], slots: ReadSlots
) -> None:
    def export(signal: Signal) -> grpc.RpcMethodHandler:
        return grpc.stream_unary_rpc_method_handler(
            _ExportHandler(signal, ingest, tokens, on_service_loop, slots).export,
            request_deserializer=None,
            response_serializer=lambda message: message.SerializeToString(),
        )

    server.add_generic_rpc_handlers(
        tuple(grpc.method_handlers_generic_handler(s.grpc_service, {"Export": export(s)}) for s in SIGNALS)
    )


class GrpcReceiver:
    """The gRPC listener, served from a thread with its own event loop (see the module docstring)."""

    def __init__(self, config: GrpcReceiverConfig, ingest: Ingest, tokens: TokenCheck) -> None:
        self._config = config
        self._ingest = ingest
        self._tokens = tokens
        self._server: grpc.aio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    async def start(self) -> None:
        require_tokens_beyond_loopback(self._tokens, self._config.host, "collector.grpc.host")
        on_service_loop = functools.partial(_run_in, asyncio.get_running_loop())
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="spanscore-grpc", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            await self._in_grpc_loop(self._start(on_service_loop))
        except BaseException:
            await self._stop_loop()
            raise
        log.info("OTLP/gRPC receiver listening address=%s:%d", self._config.host, self.port)

    async def _start(self, on_service_loop: OnServiceLoop[Any]) -> None:
        config = self._config
        options = [
            ("grpc.max_receive_message_length", config.max_message_bytes),
            ("grpc.max_concurrent_streams", config.max_streams_per_connection),
            ("grpc.http2.bdp_probe", 0),
            ("grpc.so_reuseport", 0),
        ]
        server = grpc.aio.server(options=options, maximum_concurrent_rpcs=config.max_concurrent_calls)
        _register(server, self._ingest, self._tokens, on_service_loop, ReadSlots(config.max_concurrent_reads))
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

    async def shutdown(self, grace: float = 10.0) -> None:
        """Stop accepting; in-flight exports get ``grace`` seconds to finish (they wait for storage)."""
        server, self._server = self._server, None
        if server is not None:
            await self._in_grpc_loop(server.stop(grace))
        await self._stop_loop()

    def _in_grpc_loop(self, coroutine: Coroutine[Any, Any, T]) -> Awaitable[T]:
        assert self._loop is not None
        return _run_in(self._loop, coroutine)

    async def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        await asyncio.to_thread(thread.join, 10.0)
        if not thread.is_alive():
            loop.close()
