"""The one error a client call raises, carrying what the service said.

The service answers every refusal as ``{"error": message}`` (and ``problems``, one per field or rule, when a
body was refused as a whole), so the exception keeps both: printing it shows the service's own words, and a
program can read the status to tell a bad request (fix it) from a busy service (retry it).
"""

from __future__ import annotations


class SpanscoreError(Exception):
    """A call the service refused or could not be reached for.

    ``status`` is the HTTP status (0 when no answer came: connection refused, timeout), ``message`` the
    service's ``error`` text, ``problems`` its list of per-item problems, ``retry_after`` its ``Retry-After``
    in seconds when it asked to be retried later.
    """

    def __init__(
        self, status: int, message: str, problems: list[str] | None = None, retry_after: float | None = None
    ) -> None:
        self.status = status
        self.message = message
        self.problems = list(problems or [])
        self.retry_after = retry_after
        super().__init__(self._text())

    @property
    def retryable(self) -> bool:
        """True when sending the same call again later may succeed (no answer, 429 or a 5xx other than 501)."""
        return self.status == 0 or self.status == 429 or (self.status >= 500 and self.status != 501)

    def _text(self) -> str:
        head = f"{self.status} {self.message}" if self.status else self.message
        return "\n".join([head, *(f"  {problem}" for problem in self.problems)])
