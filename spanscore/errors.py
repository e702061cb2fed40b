"""Errors that carry their retry semantics across stage boundaries.

A stage raises ``RetryableError`` when the caller should try the same work again
later (storage down, queue full) and ``PermanentError`` when it can never succeed
(undecodable input). Receivers and the API turn these into the protocol's answer in
``server/wire.py``; nothing else maps errors to the wire.
"""

from __future__ import annotations


class SpanscoreError(Exception):
    """Base class for every error spanscore raises on purpose."""


class RetryableError(SpanscoreError):
    """The work may succeed later; ``retry_after`` is a hint in seconds."""

    def __init__(self, message: str, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentError(SpanscoreError):
    """The work can never succeed as given; retrying would only repeat the failure."""


class ConfigError(SpanscoreError):
    """A configuration problem, with every issue found listed in the message."""


class PayloadTooLargeError(PermanentError):
    """The request body exceeds the configured limit."""


class UnauthenticatedError(PermanentError):
    """No valid bearer token was presented."""


class RequestShapeError(PermanentError):
    """A request in a method, content type or encoding the endpoint does not take; ``status`` is the HTTP answer.

    405 (method), 415 (content type or encoding), 413 (a body over an endpoint's own limit).
    """

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class ForbiddenError(PermanentError):
    """The request is understood but this service will not do it for this caller (HTTP 403)."""


class ConflictError(PermanentError):
    """The request clashes with work already under way, such as a second backfill of the same rule (HTTP 409)."""
