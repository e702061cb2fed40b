"""What a scorer is and what its steps see: ``ScorerInfo``, ``StepContext``, the step type and its outcomes.

Split from ``base`` (which re-exports all of it) so the pieces every step and scorer module needs are
readable apart from the ``Scorer`` pipeline that runs them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from spanscore.errors import ConfigError, SpanscoreError
from spanscore.run import TARGETS, Run, Turn

STEP_NAMES = ("preprocess", "analyze", "generate_score", "generate_reason")
"""The pipeline's steps, in the order they run."""

RUN_FIELDS = ("input", "output", "system", "context", "ground_truth", "tool_calls", "turns")
"""Run fields a scorer may declare as required (see ``Run``)."""

DEFAULT_TARGETS = ("run", "llm")
"""What a scorer that says nothing scores: whole runs, and single LLM calls (their input and output)."""

ScorerKind = Literal["code", "llm"]


class NotApplicable(SpanscoreError):
    """Raised by a step when the run is valid but this scorer has nothing to judge.

    Mastra calls this ``notScorable``. The remaining steps are skipped and the
    result has status ``not_applicable`` with the message as its reason.
    """


class MissingInput(SpanscoreError):
    """Raised by a step that finds, at run time, that a needed field is absent or empty.

    Declared fields are checked before any step runs; this is for needs that
    only a step can see (for example "the output carries no tool calls").
    """

    def __init__(self, fields: list[str] | tuple[str, ...], message: str = "") -> None:
        self.fields = tuple(fields)
        super().__init__(message or f"run lacks {', '.join(self.fields)}")


@dataclass(frozen=True, slots=True)
class ScorerInfo:
    """What a scorer is, independent of any run: stored with every score."""

    id: str
    version: str = "1"
    description: str = ""
    required_fields: tuple[str, ...] = ()
    higher_is_better: bool = True
    kind: ScorerKind = "code"
    name: str = ""
    targets: tuple[str, ...] = DEFAULT_TARGETS
    """The rule targets (``spanscore.run.TARGETS``) this scorer can score; a rule pairing it with another
    target is refused at start-up."""

    def __post_init__(self) -> None:
        wrong = [t for t in self.targets if t not in TARGETS]
        if wrong or not self.targets:
            raise ConfigError(f"scorer {self.id!r}: targets must be some of {list(TARGETS)}, got {list(self.targets)}")
        unknown = [f for f in self.required_fields if f not in RUN_FIELDS]
        if unknown:
            choices = list(RUN_FIELDS)
            raise ConfigError(f"scorer {self.id!r}: unknown required field(s) {unknown}; choose from {choices}")
        if not self.id:
            raise ConfigError("a scorer needs a non-empty id")


@dataclass(frozen=True, slots=True)
class StepContext:
    """What a step sees: the run, the scorer's options and the earlier steps' values.

    ``results`` maps step names (``"preprocess"``, ``"analyze"``...) to the
    values those steps returned; ``score`` is set only for ``generate_reason``.
    """

    run: Run
    info: ScorerInfo
    options: Mapping[str, Any]
    results: Mapping[str, Any]
    score: float | None = None

    @property
    def preprocess_result(self) -> Any:
        return self.results.get("preprocess")

    @property
    def analyze_result(self) -> Any:
        return self.results.get("analyze")


def session_turns(context: StepContext) -> tuple[Turn, ...]:
    """The turns of the session being scored (``target: session``); ``NotApplicable`` when it has none.

    A run without ``turns`` at all is caught earlier, as ``missing_input``, by scorers requiring ``"turns"``.
    """
    turns = context.run.turns or ()
    if not turns:
        raise NotApplicable("the session has no turns")
    return turns


Step = Callable[[StepContext], Any]
"""A step: ``step(context)`` returns a value, a ``StepOutput``, or an awaitable of either."""


def is_async_step(step: Step | None) -> bool:
    """True when ``step`` must be awaited (a coroutine function or an object with an async ``__call__``)."""
    if step is None:
        return False
    if getattr(step, "is_async", False) is True:
        return True
    if inspect.iscoroutinefunction(step):
        return True
    return not inspect.isroutine(step) and inspect.iscoroutinefunction(type(step).__call__)
