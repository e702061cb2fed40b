"""What the judge client does when a judge misbehaves: classify, back off, trip a breaker.

Every exception litellm raises falls in one of four classes:

* transient (429, 5xx, timeouts, dropped connections): retried with
  exponential backoff and full jitter, honouring ``Retry-After``; counted by
  the model's circuit breaker;
* mode refused (a 400/422 while asking for structured output): the model does
  not take that structured-output mode, so the client steps down the ladder;
* context too long / auth / unknown model / other 4xx: permanent, never retried.

The breaker is per model: after ``failure_threshold`` transient failures in a
row it opens and calls fail fast for ``cooldown_s``; then one probe call is let
through, and its outcome closes or reopens the breaker.
"""

from __future__ import annotations

import enum
import random
import time
from collections.abc import Callable

# Through judge_litellm, never ``from litellm...`` directly: the first import of litellm in a process must
# come after judge_litellm's settings, or litellm fetches its price table from the network while loading
# (judge worker processes import this module first).
from spanscore.scorers.judge.hints import body_retry_delay
from spanscore.scorers.judge.litellm_call import litellm

_errors = litellm.exceptions


class Failure(enum.Enum):
    TRANSIENT = "transient"
    MODE_REFUSED = "mode_refused"
    PERMANENT = "permanent"


_TRANSIENT_TYPES: tuple[type[BaseException], ...] = (
    _errors.RateLimitError,
    _errors.Timeout,
    _errors.APIConnectionError,
    _errors.InternalServerError,
    _errors.ServiceUnavailableError,
    _errors.BadGatewayError,
    TimeoutError,
    ConnectionError,
)
_PERMANENT_4XX: tuple[type[BaseException], ...] = (
    _errors.ContextWindowExceededError,
    _errors.ContentPolicyViolationError,
    _errors.AuthenticationError,
    _errors.PermissionDeniedError,
    _errors.NotFoundError,
)


def classify(error: BaseException, *, structured: bool) -> Failure:
    """Sort a judge call's exception; ``structured`` says whether the request asked for a JSON mode."""
    if isinstance(error, _TRANSIENT_TYPES):
        return Failure.TRANSIENT
    if isinstance(error, _PERMANENT_4XX):
        return Failure.PERMANENT
    status = getattr(error, "status_code", None)
    if isinstance(status, int) and (status == 429 or status >= 500):
        return Failure.TRANSIENT
    if structured and isinstance(error, _errors.BadRequestError | _errors.UnprocessableEntityError):
        return Failure.MODE_REFUSED
    if structured and status in (400, 422):
        return Failure.MODE_REFUSED
    return Failure.PERMANENT


def retry_after(error: BaseException) -> float | None:
    """The server's wait hint in seconds: its ``Retry-After`` header, else one in the error body (``hints``)."""
    response = getattr(error, "response", None)
    value = None
    for headers in (getattr(error, "litellm_response_headers", None), getattr(response, "headers", None)):
        if headers and hasattr(headers, "get"):
            value = headers.get("retry-after")
            if value is not None:
                break
    try:
        if value is not None:
            return max(0.0, float(value))
    except (TypeError, ValueError):
        pass
    if getattr(error, "status_code", None) != 429 and not isinstance(error, _errors.RateLimitError):
        return None  # a body's hint is about rate limits; a 500 quoting one is not asking us to wait
    return body_retry_delay(str(error))


def backoff_delay(
    attempt: int, *, initial_s: float, max_s: float, hint_s: float | None, draw: Callable[[], float] = random.random
) -> float:
    """Full-jitter exponential backoff: uniform in [0, min(max, initial * 2**attempt)], at least the server's hint."""
    ceiling = min(max_s, initial_s * (2.0**attempt))
    delay = draw() * ceiling
    if hint_s is not None:
        delay = max(delay, min(hint_s, max_s))
    return delay


class BreakerOpenError(Exception):
    """Raised by ``CircuitBreaker.admit`` while open; ``retry_after`` says when the next probe may go."""

    def __init__(self, model: str, retry_after: float, cause: str = "") -> None:
        because = f" (last failure: {cause})" if cause else ""
        super().__init__(
            f"judge {model}: circuit open after repeated failures{because}, next try in {retry_after:.1f}s"
        )
        self.retry_after = retry_after


class CircuitBreaker:
    """Closed -> open after consecutive transient failures -> half-open (one probe) -> closed or open."""

    def __init__(
        self, model: str, *, failure_threshold: int, cooldown_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.model = model
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False
        self.last_failure = ""
        """Why the last transient failure happened: an open circuit's error names its cause, not only its state."""

    @property
    def state(self) -> str:
        if self._opened_at is None:
            return "closed"
        return "half_open" if self._clock() - self._opened_at >= self.cooldown_s else "open"

    def admit(self) -> None:
        """Let a call through or raise ``BreakerOpenError``; in half-open only one probe is in flight."""
        if self._opened_at is None:
            return
        waited = self._clock() - self._opened_at
        if waited < self.cooldown_s:
            raise BreakerOpenError(self.model, self.cooldown_s - waited, self.last_failure)
        if self._probing:
            raise BreakerOpenError(self.model, self.cooldown_s, self.last_failure)
        self._probing = True

    def record_success(self) -> None:
        self._failures = 0
        self._opened_at = None
        self._probing = False

    def record_failure(self, cause: str = "") -> None:
        self._failures += 1
        self.last_failure = cause[:300] or self.last_failure
        if self._probing or self._failures >= self.failure_threshold:
            self._opened_at = self._clock()
        self._probing = False

    def release(self) -> None:
        """End a probe that neither succeeded nor failed transiently (for example a refused mode)."""
        self._probing = False
