"""The only place that turns spanscore's errors into OTLP wire answers.

| situation                      | gRPC                                    | HTTP                     |
|--------------------------------|-----------------------------------------|--------------------------|
| undecodable / invalid request  | INVALID_ARGUMENT                        | 400                      |
| body over the limit            | RESOURCE_EXHAUSTED (max message size)   | 413                      |
| queue full, storage down       | UNAVAILABLE with RetryInfo              | 503 with Retry-After     |
| missing or wrong token         | UNAUTHENTICATED                         | 401                      |
| a bug                          | INTERNAL                                | 500                      |

Backpressure always carries a retry hint: an OTLP client that gets
RESOURCE_EXHAUSTED or UNAVAILABLE without one may drop the data instead of
retrying. The hint travels both as ``google.rpc.retryinfo-bin`` (read by the
Python exporter) and inside ``grpc-status-details-bin`` (read by the Go one).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import grpc
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2

from spanscore.errors import PayloadTooLargeError, PermanentError, RetryableError, UnauthenticatedError

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
    if isinstance(exc, PermanentError):
        return WireError(grpc.StatusCode.INVALID_ARGUMENT, 400, str(exc))
    log.exception("internal error while handling an export", exc_info=exc)
    return WireError(grpc.StatusCode.INTERNAL, 500, "internal error; see the spanscore log")


def retry_after_header(seconds: float) -> str:
    """Retry-After takes whole seconds; round up so clients never come back early."""
    return str(max(1, math.ceil(seconds)))


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
