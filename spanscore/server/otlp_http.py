"""OTLP/HTTP receiver: POST /v1/traces, /v1/logs and /v1/metrics, protobuf or JSON, plain or gzip.

Responses use the request's encoding, as the OTLP specification asks: an
``Export*ServiceResponse`` (with ``partial_success`` when some items were
rejected) on success, a ``google.rpc.Status`` on failure. Bodies are bounded
before and after decompression, so a small gzip bomb cannot inflate past the
limit.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import Message

from spanscore.collector.ingest import Ingest
from spanscore.errors import PayloadTooLargeError, PermanentError, RequestShapeError
from spanscore.server.auth import TokenCheck, require_tokens_beyond_loopback
from spanscore.server.bodies import read_limited
from spanscore.server.listeners_config import HttpReceiverConfig
from spanscore.server.origin import HostCheck
from spanscore.server.otlp_signals import SIGNALS, Signal
from spanscore.server.read_slots import READ_TIMEOUT_S, ReadSlots
from spanscore.server.wire import classify, http_headers, http_status_body

log = logging.getLogger(__name__)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


def _encode(message: Message, json_body: bool) -> bytes:
    if json_body:
        return str(json_format.MessageToJson(message, indent=None)).encode("utf-8")
    return bytes(message.SerializeToString())


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body, decompressed, refusing anything over ``limit`` bytes or slower than ``READ_TIMEOUT_S``."""
    try:
        body = await asyncio.wait_for(read_limited(request, limit), READ_TIMEOUT_S)
    except TimeoutError:
        raise PermanentError(f"the request body did not arrive within {READ_TIMEOUT_S:g} s") from None
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise RequestShapeError(f"unsupported Content-Encoding {encoding!r}; use gzip or none", 415)
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise PermanentError(f"request body is not valid gzip: {exc}") from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise PayloadTooLargeError(f"decompressed request body exceeds the limit of {limit} bytes")
    if not inflater.eof:
        raise PermanentError("request body is truncated gzip")
    if inflater.unused_data:
        # A second gzip member or trailing garbage: refuse it rather than store half of what was sent.
        raise PermanentError(
            f"request body has {len(inflater.unused_data)} bytes after the end of its gzip stream; send one gzip member"
        )
    return data


def _media_type(request: web.Request) -> bool:
    """True for JSON, False for protobuf; raise for anything else."""
    media = request.content_type.lower()
    if media == PROTOBUF:
        return False
    if media == JSON:
        return True
    raise RequestShapeError(f"unsupported Content-Type {media!r}; use {PROTOBUF} or {JSON}", 415)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class HttpReceiver:
    def __init__(self, config: HttpReceiverConfig, ingest: Ingest, tokens: TokenCheck) -> None:
        self._config = config
        self._ingest = ingest
        self._tokens = tokens
        self._hosts = HostCheck(config.allowed_hosts, config.host, "collector.http.allowed_hosts")
        self._slots = ReadSlots(config.max_concurrent_reads, "OTLP/HTTP", "collector.http.max_concurrent_reads")
        self._runner: web.AppRunner | None = None
        self.port = 0

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self._config.max_body_bytes)
        for signal in SIGNALS:
            app.router.add_post(signal.http_path, functools.partial(self._export, signal))
        return app

    async def _export(self, signal: Signal, request: web.Request) -> web.Response:
        """Host, token and media type first; then the body is read and decoded holding one of the read slots."""
        json_body = request.content_type.lower() == JSON
        try:
            refused_host = self._hosts.refusal_message(request.headers.get("Host"))
            if refused_host is not None:
                raise RequestShapeError(refused_host, 421)
            self._tokens.verify(request.headers.get("Authorization"))
            json_body = _media_type(request)
            async with self._slots.slot() as release:
                body = await read_body(request, self._config.max_body_bytes)
                export = signal.export(self._ingest)
                message = signal.response(await export(body, json_body=json_body, decoded_hook=release))
        except Exception as exc:
            error = classify(exc)
            payload = _encode(http_status_body(error), json_body)
            return web.Response(
                status=error.http_status,
                body=payload,
                content_type=JSON if json_body else PROTOBUF,
                headers=http_headers(error),
            )
        return web.Response(status=200, body=_encode(message, json_body), content_type=JSON if json_body else PROTOBUF)

    async def start(self) -> None:
        require_tokens_beyond_loopback(self._tokens, self._config.host, "collector.http.host")
        # Decompression is ours (bounded); aiohttp's own would inflate without a limit.
        self._runner, self.port = await serve_app(self.app(), self._config, auto_decompress=False)
        log.info("OTLP/HTTP receiver listening address=%s:%d", self._config.host, self.port)

    async def shutdown(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


async def serve_app(app: web.Application, config: Any, **server_options: Any) -> tuple[web.AppRunner, int]:
    """Start ``app`` on ``config.host:config.port`` (TLS when ``config.tls`` is set); return the runner and port."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False, **server_options)
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port, ssl_context=_ssl(config))
    await site.start()
    server: Any = site._server  # aiohttp exposes the bound sockets only here
    return runner, int(server.sockets[0].getsockname()[1])


def _ssl(config: Any) -> ssl.SSLContext | None:
    if config.tls is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(config.tls.cert_file), str(config.tls.key_file))
    return context
