"""Whether a judge is failing now: the figures ``spanscore status``, ``/metrics`` and the dashboard show.

Scores that end in an error say what went wrong one run at a time, and only once their retries are spent;
an operator needs to know while it lasts that the judge is out, since when, and why. The client records
every call's outcome here per model and ``api_base``: a failure opens (or extends) a failing spell, the
first success ends it. Calls the open circuit breaker turned away count as failing calls too (they are
calls that did not reach the judge), under the cause of the failure that opened it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from spanscore.metric_keys import metric_key


@dataclass
class FailingSpell:
    """One model's run of failed calls since its last success."""

    since: float
    calls: int
    cause: str


class JudgeHealth:
    """Failing spells per judge model; ``metrics`` is empty while every judge answers."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._failing: dict[str, FailingSpell] = {}

    def failed(self, model: str, cause: str | None) -> None:
        """One call of ``model`` failed; ``cause`` None keeps the spell's cause (a call the breaker refused)."""
        spell = self._failing.get(model)
        if spell is None:
            self._failing[model] = FailingSpell(self._clock(), 1, cause or "circuit open after repeated failures")
            return
        spell.calls += 1
        if cause:
            spell.cause = cause

    def answered(self, model: str) -> None:
        """A call of ``model`` got an answer: its failing spell, if any, is over."""
        self._failing.pop(model, None)

    def failing(self) -> dict[str, FailingSpell]:
        return dict(self._failing)

    def metrics(self) -> dict[str, float]:
        """``judge_failing_calls{model,cause}`` and ``judge_failing_seconds{model}`` per failing model."""
        now = self._clock()
        out: dict[str, float] = {}
        for model, spell in self._failing.items():
            out[metric_key("judge_failing_calls", model=model, cause=spell.cause)] = spell.calls
            out[metric_key("judge_failing_seconds", model=model)] = round(now - spell.since, 1)
        return out
