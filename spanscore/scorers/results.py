"""What a scoring attempt produces: its status, each step's output and the final ``ScoreResult``.

``base.py`` runs the pipeline; this module holds the value types it fills in
(and that the judge steps return), so they can be read without the pipeline.
All names are re-exported from ``spanscore.scorers.base``.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spanscore.slots_pickle import pickled_by_slots


class Status(enum.StrEnum):
    """How a scoring attempt ended. Only ``OK`` carries a score."""

    OK = "ok"
    NOT_APPLICABLE = "not_applicable"
    MISSING_INPUT = "missing_input"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class StepOutput:
    """A step's value plus what it cost; steps that need no accounting return the bare value."""

    value: Any
    prompt: str | None = None
    judge_model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    judge_mode: str | None = None
    cost_known: bool = True


@pickled_by_slots
@dataclass(frozen=True, slots=True)
class ScoreResult:
    """One scorer's verdict on one run, including how it got there.

    ``steps`` holds each executed step's value by step name; ``prompts`` the
    prompts judge steps sent. Timing is wall clock: ``started_at`` in Unix
    seconds, durations in milliseconds. The judge fields sum over all steps.
    """

    scorer_id: str
    scorer_version: str
    status: Status
    score: float | None = None
    reason: str | None = None
    error: str | None = None
    failed_step: str | None = None
    retryable: bool = False
    retry_after: float = 0.0
    """For a retryable error: the earliest useful retry, in seconds (the judge's Retry-After or its
    circuit breaker's remaining cool-down); 0 when nothing said."""
    missing_fields: tuple[str, ...] = ()
    run_id: str = ""
    steps: Mapping[str, Any] = field(default_factory=dict)
    prompts: Mapping[str, str] = field(default_factory=dict)
    started_at: float = 0.0
    duration_ms: float = 0.0
    step_durations_ms: Mapping[str, float] = field(default_factory=dict)
    judge_model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    judge_mode: str | None = None
    """The structured-output mode litellm actually sent for the last judge call (``judge.wire``)."""
    cost_known: bool = True
    """False when litellm could not price a judge call: ``cost_usd`` then counts only the priced ones."""
    cuts: Mapping[str, int] = field(default_factory=dict)
    """Texts cut to ``bounds.MAX_TEXT_CHARS`` before scoring: what ("output", "input", ...) -> original length."""
    redactions: Mapping[str, int] = field(default_factory=dict)
    """Values masked in what the judge was sent, per detector (``spanscore.redaction``); counts, never values."""

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (step values must themselves be JSON-serialisable)."""
        return {
            "scorer_id": self.scorer_id,
            "scorer_version": self.scorer_version,
            "status": self.status.value,
            "score": self.score,
            "reason": self.reason,
            "error": self.error,
            "failed_step": self.failed_step,
            "retryable": self.retryable,
            "missing_fields": list(self.missing_fields),
            "run_id": self.run_id,
            "steps": dict(self.steps),
            "prompts": dict(self.prompts),
            "started_at": self.started_at,
            "duration_ms": self.duration_ms,
            "step_durations_ms": dict(self.step_durations_ms),
            "judge_model": self.judge_model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd if self.cost_known else None,
            "cost": "priced" if self.cost_known else "unknown",
            "judge_mode": self.judge_mode,
            "cuts": dict(self.cuts),
            "redactions": dict(self.redactions),
        }


class Tally:
    """Accumulates per-step values, prompts, timings and judge accounting during one run."""

    __slots__ = (
        "values", "prompts", "durations", "judge_model", "input_tokens", "output_tokens", "cost_usd", "judge_mode",
        "cost_known",
    )  # fmt: skip

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.prompts: dict[str, str] = {}
        self.durations: dict[str, float] = {}
        self.judge_model: str | None = None
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.judge_mode: str | None = None
        self.cost_known = True

    def charge(self, name: str, spent: StepOutput) -> None:
        """Account for what a step spent: one that returned, or one that failed after spending."""
        if spent.prompt is not None:
            self.prompts[name] = spent.prompt
        self.judge_model = spent.judge_model or self.judge_model
        self.input_tokens += spent.input_tokens
        self.output_tokens += spent.output_tokens
        self.cost_usd += spent.cost_usd
        self.judge_mode = spent.judge_mode or self.judge_mode
        self.cost_known = self.cost_known and spent.cost_known

    def record(self, name: str, raw: Any, started: float) -> Any:
        self.durations[name] = (time.perf_counter() - started) * 1000.0
        if isinstance(raw, StepOutput):
            self.charge(name, raw)
            raw = raw.value
        self.values[name] = raw
        return raw
