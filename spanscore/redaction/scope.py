"""Where redaction is applied on the judge path: the rule's policy, one run's placeholders, what fired.

The scoring worker puts the rule's ``Redactor`` in context (:func:`under_policy`); ``Scorer`` opens one
:class:`RunRedaction` per scoring attempt (:func:`redacting_run`), so every judge step of the run shares its
placeholders; each judge step passes its prompt through :func:`for_judge` right before the call. Without a
policy in context (a library user, a backfill), every built-in detector applies: the safe side.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache

from spanscore.redaction.detectors import builtin_detectors
from spanscore.redaction.redactor import Placeholders, Redactor

_POLICY: ContextVar[Redactor | None] = ContextVar("spanscore_redaction_policy", default=None)
_RUN: ContextVar[RunRedaction | None] = ContextVar("spanscore_redaction_run", default=None)


class RunRedaction:
    """One scoring attempt's placeholders and counts (detector -> values masked); never the values."""

    __slots__ = ("counts", "placeholders", "redactor")

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.placeholders = Placeholders()
        self.counts: Counter[str] = Counter()

    def redact(self, text: str) -> str:
        redacted = self.redactor.redact(text, self.placeholders)
        self.counts.update(redacted.counts())
        return redacted.text


@cache
def default_redactor() -> Redactor:
    """Every built-in detector: what applies where no rule's policy was put in context."""
    return Redactor(list(builtin_detectors().values()))


@contextmanager
def under_policy(redactor: Redactor) -> Iterator[None]:
    token = _POLICY.set(redactor)
    try:
        yield
    finally:
        _POLICY.reset(token)


@contextmanager
def redacting_run() -> Iterator[RunRedaction]:
    """One run's redaction: the policy in context (or the default), fresh placeholders, counts to read after."""
    run = RunRedaction(_POLICY.get() or default_redactor())
    token = _RUN.set(run)
    try:
        yield run
    finally:
        _RUN.reset(token)


def for_judge(text: str) -> str:
    """``text`` as a judge may see it: redacted under the run's policy (a one-off run when none is open)."""
    run = _RUN.get()
    if run is None:
        run = RunRedaction(_POLICY.get() or default_redactor())
    return run.redact(text)
