"""What a judge call cost, and the errors a judge call ends in when no valid verdict comes back.

Every error carries the ``JudgeSpend`` of the attempt (calls, tokens, cost), so
a failed score still records what it spent. ``JudgeUnavailableError`` is
retryable (rate limits, outages, an open breaker); ``JudgeAnswerError`` is
permanent (answers that never validate, a request the judge refuses).
"""

from __future__ import annotations

from dataclasses import dataclass

from spanscore.errors import PermanentError, RetryableError, SpanscoreError
from spanscore.scorers.judge.transport import Reply


@dataclass
class JudgeSpend:
    """Calls, tokens and cost spent on one ``ask``, successful or not."""

    model: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """Calls litellm could not price: while any, ``cost_usd`` is a lower bound, not the cost."""
    mode: str | None = None
    """The structured-output mode of the last call, as sent on the wire."""

    @property
    def cost_known(self) -> bool:
        return self.unpriced_calls == 0

    def add(self, reply: Reply) -> None:
        self.calls += 1
        self.input_tokens += reply.input_tokens
        self.output_tokens += reply.output_tokens
        self.cost_usd += reply.cost_usd
        self.unpriced_calls += 0 if reply.priced else 1
        self.mode = reply.mode_sent or self.mode


class JudgeError(SpanscoreError):
    """The judge could not produce a valid verdict; ``spend`` says what the attempt cost."""

    def __init__(self, message: str, *, spend: JudgeSpend) -> None:
        super().__init__(message)
        self.spend = spend


class JudgeUnavailableError(JudgeError, RetryableError):
    """Rate limited, down, timing out or breaker open: the same request may succeed later."""

    def __init__(self, message: str, *, spend: JudgeSpend, retry_after: float = 1.0) -> None:
        super().__init__(message, spend=spend)
        self.retry_after = retry_after


class JudgeAnswerError(JudgeError, PermanentError):
    """The judge answered, but never with a verdict that validates (or the request itself is refused)."""
