"""The only place that turns spanscore's errors into OTLP wire answers.

| situation                      | gRPC                                    | HTTP                     |
|--------------------------------|-----------------------------------------|--------------------------|
| undecodable / invalid request  | INVALID_ARGUMENT                        | 400                      |
| body over the limit            | RESOURCE_EXHAUSTED (max message size)   | 413                      |
| queue full, storage down       | UNAVAILABLE with RetryInfo              | 503 with Retry-After     |
| missing or wrong token         | UNAUTHENTICATED                         | 401                      |
| wrong method / content type    | INVALID_ARGUMENT                        | 405 / 415                |
| refused for this caller        | PERMISSION_DENIED                       | 403                      |
| a bad config or rule set       | INVALID_ARGUMENT                        | 400                      |
| a bug                          | INTERNAL                                | 500                      |

The HTTP API (queries, rules, scores, operations, dashboard data) answers with the same
mapping through ``json_error``: ``{"error": message}`` and, for backpressure, the error's own
``Retry-After``.

Backpressure always carries a retry hint: an OTLP client that gets
RESOURCE_EXHAUSTED or UNAVAILABLE without one may drop the data instead of
retrying. The hint travels both as ``google.rpc.retryinfo-bin`` (read by the
Python exporter) and inside ``grpc-status-details-bin`` (read by the Go one).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from aiohttp import web
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2

from spanscore.errors import (
    ConfigError,
    ConflictError,
    ForbiddenError,
    PayloadTooLargeError,
    PermanentError,
    RequestShapeError,
    RetryableError,
    UnauthenticatedError,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WireError:
    grpc_code: grpc.StatusCode
    http_status: int
    message: str
    retry_after: float | None = None


def classify(exc: BaseException) -> WireError:
    """Decide the protocol answer for an exception raised while handling an export."""
    if isinstance(exc, RetryableError):
        return WireError(grpc.StatusCode.UNAVAILABLE, 503, str(exc), max(exc.retry_after, 0.0))
    if isinstance(exc, UnauthenticatedError):
        return WireError(grpc.StatusCode.UNAUTHENTICATED, 401, str(exc))
    if isinstance(exc, PayloadTooLargeError):
        return WireError(grpc.StatusCode.RESOURCE_EXHAUSTED, 413, str(exc), None)
    if isinstance(exc, RequestShapeError):
        return WireError(grpc.StatusCode.INVALID_ARGUMENT, exc.status, str(exc))
    if isinstance(exc, ConflictError):
        return WireError(grpc.StatusCode.ALREADY_EXISTS, 409, str(exc))
    if isinstance(exc, ForbiddenError):
        return WireError(grpc.StatusCode.PERMISSION_DENIED, 403, str(exc))
    if isinstance(exc, PermanentError | ConfigError):
        return WireError(grpc.StatusCode.INVALID_ARGUMENT, 400, str(exc))
    log.exception("internal error while handling an export", exc_info=exc)
    return WireError(grpc.StatusCode.INTERNAL, 500, "internal error; see the spanscore log")


def retry_after_header(seconds: float) -> str:
    """Retry-After takes whole seconds; round up so clients never come back early."""
    return str(max(1, math.ceil(seconds)))


def http_headers(error: WireError) -> dict[str, str]:
    """Backpressure tells the client when to come back, from the error's own hint."""
    return {"Retry-After": retry_after_header(error.retry_after)} if error.retry_after is not None else {}


def json_error(exc: BaseException, headers: Mapping[str, str] | None = None, **extra: Any) -> web.Response:
    """The API's answer to ``exc``: ``{"error": message, **extra}`` with the status and headers ``classify`` gives.

    A 405 names the methods in ``headers`` (``Allow``); ``extra`` adds fields such as ``problems``.
    """
    error = classify(exc)
    return web.json_response(
        {"error": error.message, **extra}, status=error.http_status, headers={**(headers or {}), **http_headers(error)}
    )


def grpc_trailers(error: WireError) -> tuple[tuple[str, bytes], ...]:
    if error.retry_after is None:
        return ()
    delay = Duration()
    delay.FromNanoseconds(int(error.retry_after * 1e9))
    info = error_details_pb2.RetryInfo(retry_delay=delay)
    status = status_pb2.Status(code=error.grpc_code.value[0], message=error.message)
    status.details.add().Pack(info)
    return (
        ("google.rpc.retryinfo-bin", info.SerializeToString()),
        ("grpc-status-details-bin", status.SerializeToString()),
    )


def http_status_body(error: WireError) -> Message:
    """The google.rpc.Status body that OTLP/HTTP error responses carry."""
    code = {
        400: code_pb2.INVALID_ARGUMENT,
        401: code_pb2.UNAUTHENTICATED,
        403: code_pb2.PERMISSION_DENIED,
        405: code_pb2.INVALID_ARGUMENT,
        415: code_pb2.INVALID_ARGUMENT,
        413: code_pb2.RESOURCE_EXHAUSTED,
        503: code_pb2.UNAVAILABLE,
    }.get(error.http_status, code_pb2.INTERNAL)
    status = status_pb2.Status(code=code, message=error.message)
    if error.retry_after is not None:
        delay = Duration()
        delay.FromNanoseconds(int(error.retry_after * 1e9))
        status.details.add().Pack(error_details_pb2.RetryInfo(retry_delay=delay))
    result: Message = status
    return result
