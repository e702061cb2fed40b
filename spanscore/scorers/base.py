"""The scorer framework: four steps, one result type, one ``Scorer`` class.

A scorer turns a :class:`~spanscore.run.Run` into a :class:`ScoreResult` in
Mastra's four steps: ``preprocess`` -> ``analyze`` -> ``generate_score`` ->
``generate_reason``. Only ``generate_score`` is required. Every step is a
callable that takes a :class:`StepContext` (the run, the scorer's options and
the results of the earlier steps) and returns a value, either directly (code
steps) or as an awaitable (LLM judge steps; ``spanscore.scorers.judge.client`` builds
those). A step may wrap its value in :class:`StepOutput` to report the prompt
it sent and the judge's model, tokens and cost; the pipeline adds those up.

The sampling workers call ``await scorer.arun(run)``; library users and the
offline ``score`` command may call the synchronous ``scorer.run(run)``, which
never starts an event loop for a scorer whose steps are all synchronous.

Outcomes other than a score are results too, never exceptions: a run lacking
a declared field gives ``missing_input``, a step raising :class:`NotApplicable`
gives ``not_applicable``, and any other exception gives ``error`` with the
failing step named. None of these carries a score.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from spanscore.errors import ConfigError, RetryableError
from spanscore.redaction.scope import redacting_run
from spanscore.run import Run
from spanscore.scorers.bounds import recording_cuts
from spanscore.scorers.contracts import (
    DEFAULT_TARGETS,
    RUN_FIELDS,
    STEP_NAMES,
    MissingInput,
    NotApplicable,
    ScorerInfo,
    ScorerKind,
    Step,
    StepContext,
    is_async_step,
    session_turns,
)
from spanscore.scorers.results import ScoreResult, Status, StepOutput, Tally

__all__ = [
    "RUN_FIELDS",
    "STEP_NAMES",
    "DEFAULT_TARGETS",
    "AsyncStep",
    "MissingInput",
    "NotApplicable",
    "ScoreResult",
    "Scorer",
    "ScorerInfo",
    "ScorerKind",
    "Status",
    "Step",
    "StepContext",
    "StepOutput",
    "Tally",
    "create_scorer",
    "is_async_step",
    "session_turns",
]


class Scorer:
    """A scorer: metadata, options and up to four steps.

    Build one with :func:`spanscore.scorers.create_scorer` (chained like
    Mastra's ``createScorer``) or get a built-in from
    :func:`spanscore.scorers.build`. Chaining returns a new scorer; a scorer is
    immutable and safe to share between tasks and threads.
    """

    __slots__ = ("info", "options", "origin", "_steps", "_is_async")

    def __init__(
        self,
        info: ScorerInfo,
        *,
        options: Mapping[str, Any] | None = None,
        preprocess: Step | None = None,
        analyze: Step | None = None,
        generate_score: Step | None = None,
        generate_reason: Step | None = None,
    ) -> None:
        self.info = info
        self.options: Mapping[str, Any] = dict(options or {})
        self.origin: tuple[str, Mapping[str, Any]] | None = None
        """The name and options ``registry.build`` made this scorer from, so a worker process can make it again."""
        self._steps: tuple[Step | None, ...] = (preprocess, analyze, generate_score, generate_reason)
        self._is_async = any(is_async_step(s) for s in self._steps)

    # -- metadata -------------------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def steps(self) -> dict[str, Step | None]:
        """The four steps by name (``preprocess`` ... ``generate_reason``); None where a scorer has none."""
        return dict(zip(STEP_NAMES, self._steps, strict=True))

    @property
    def judge_steps(self) -> int:
        """How many of the steps ask the judge: the fewest judge calls one scored run costs (re-asks add more)."""
        return sum(1 for step in self._steps if is_async_step(step))

    @property
    def version(self) -> str:
        return self.info.version

    @property
    def is_async(self) -> bool:
        """True when at least one step is a coroutine (an LLM judge step); ``arun`` is then the natural call."""
        return self._is_async

    def __repr__(self) -> str:
        return f"Scorer(id={self.info.id!r}, version={self.info.version!r}, kind={self.info.kind!r})"

    # -- chaining -------------------------------------------------------------------------------------------

    def _with(self, index: int, step: Step) -> Scorer:
        steps = list(self._steps)
        steps[index] = step
        return Scorer(self.info, options=self.options, **dict(zip(STEP_NAMES, steps, strict=True)))

    def preprocess(self, step: Step) -> Scorer:
        """Return a copy whose first step is ``step`` (extract what later steps need)."""
        return self._with(0, step)

    def analyze(self, step: Step) -> Scorer:
        """Return a copy with ``step`` as the analysis step."""
        return self._with(1, step)

    def generate_score(self, step: Step) -> Scorer:
        """Return a copy with ``step`` producing the number (required before running)."""
        return self._with(2, step)

    def generate_reason(self, step: Step) -> Scorer:
        """Return a copy with ``step`` explaining the score in words."""
        return self._with(3, step)

    def with_info(self, **changes: Any) -> Scorer:
        """Return a copy with changed metadata (for example a new ``version``)."""
        steps = dict(zip(STEP_NAMES, self._steps, strict=True))
        return Scorer(replace(self.info, **changes), options=self.options, **steps)

    # -- running --------------------------------------------------------------------------------------------

    def run(self, run: Run) -> ScoreResult:
        """Score ``run`` synchronously.

        Scorers with only synchronous steps run inline without an event loop;
        scorers with async steps get a private loop (so do not call this from
        inside a running loop: use ``arun`` there).
        """
        if not self._is_async:
            coroutine = self._execute(run)
            try:
                coroutine.send(None)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            # A "sync" step returned an awaitable that suspended: finish on a loop.
            coroutine.close()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(run))
        raise RuntimeError(
            f"scorer {self.info.id!r} has async (judge) steps: inside an event loop use 'await scorer.arun(run)'"
        )

    async def arun(self, run: Run) -> ScoreResult:
        """Score ``run``; awaits judge steps, calls code steps inline."""
        return await self._execute(run)

    def _base_result(self, run: Run, status: Status, started_at: float, t0: float, **fields: Any) -> ScoreResult:
        return ScoreResult(
            scorer_id=self.info.id,
            scorer_version=self.info.version,
            status=status,
            run_id=run.run_id,
            started_at=started_at,
            duration_ms=(time.perf_counter() - t0) * 1000.0,
            **fields,
        )

    async def _execute(self, run: Run) -> ScoreResult:
        """Run the steps; what the built-in text helpers cut on the way is recorded in ``cuts`` (see ``bounds``).

        Judge steps share one run's placeholders and record what their redaction masked (``redaction.scope``).
        """
        with recording_cuts() as cuts, redacting_run() as redaction:
            result = await self._run_steps(run)
        if redaction.counts:
            result = replace(result, redactions=dict(redaction.counts))
        return replace(result, cuts=dict(cuts)) if cuts else result

    async def _run_steps(self, run: Run) -> ScoreResult:
        started_at, t0 = time.time(), time.perf_counter()
        missing = run.missing(self.info.required_fields)
        if missing:
            message = f"run lacks required field(s): {', '.join(missing)}"
            return self._base_result(
                run, Status.MISSING_INPUT, started_at, t0, reason=message, missing_fields=tuple(missing)
            )
        if self._steps[2] is None:
            raise ConfigError(f"scorer {self.info.id!r} has no generate_score step")
        tally = Tally()
        current = "preprocess"
        try:
            score: float | None = None
            reason: str | None = None
            for current, step in zip(STEP_NAMES, self._steps, strict=True):
                if step is None:
                    continue
                context = StepContext(run, self.info, self.options, tally.values, score)
                step_t0 = time.perf_counter()
                raw = step(context)
                if inspect.isawaitable(raw):
                    raw = await raw
                value = tally.record(current, raw, step_t0)
                if current == "generate_score":
                    score = _as_score(value, self.info.id)
                elif current == "generate_reason":
                    reason = None if value is None else str(value)
        except NotApplicable as skip:
            return self._finish(run, tally, Status.NOT_APPLICABLE, started_at, t0, reason=str(skip) or None)
        except MissingInput as lack:
            return self._finish(
                run, tally, Status.MISSING_INPUT, started_at, t0, reason=str(lack), missing_fields=lack.fields
            )
        except Exception as exc:  # a failing step is a result, never a crash of the worker
            spent = getattr(exc, "spent", None)  # set by judge steps: tokens and cost of the failed attempt
            if isinstance(spent, StepOutput):
                tally.charge(current, spent)
            return self._finish(
                run,
                tally,
                Status.ERROR,
                started_at,
                t0,
                error=f"{type(exc).__name__}: {exc}",
                failed_step=current,
                retryable=isinstance(exc, RetryableError),
                retry_after=exc.retry_after if isinstance(exc, RetryableError) else 0.0,
            )
        return self._finish(run, tally, Status.OK, started_at, t0, score=score, reason=reason)

    def _finish(
        self, run: Run, tally: Tally, status: Status, started_at: float, t0: float, **fields: Any
    ) -> ScoreResult:
        return self._base_result(
            run,
            status,
            started_at,
            t0,
            steps=tally.values,
            prompts=tally.prompts,
            step_durations_ms=tally.durations,
            judge_model=tally.judge_model,
            input_tokens=tally.input_tokens,
            output_tokens=tally.output_tokens,
            cost_usd=tally.cost_usd,
            judge_mode=tally.judge_mode,
            cost_known=tally.cost_known,
            **fields,
        )


def _as_score(value: Any, scorer_id: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"scorer {scorer_id!r}: generate_score returned {type(value).__name__}, expected a number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"scorer {scorer_id!r}: generate_score returned {number}, expected a finite number")
    return number


AsyncStep = Callable[[StepContext], Awaitable[Any]]
"""The shape of a judge step: ``await step(context)`` returns a value or a ``StepOutput``."""


def create_scorer(
    id: str,
    *,
    version: str = "1",
    description: str = "",
    requires: tuple[str, ...] | list[str] = (),
    higher_is_better: bool = True,
    kind: ScorerKind = "code",
    name: str = "",
    options: Mapping[str, Any] | None = None,
    targets: tuple[str, ...] | list[str] = DEFAULT_TARGETS,
) -> Scorer:
    """Start a scorer; chain ``.preprocess()``, ``.analyze()``, ``.generate_score()``, ``.generate_reason()``.

    ``requires`` names the run fields the scorer cannot do without (``"input"``,
    ``"output"``, ``"context"``, ``"ground_truth"``, ``"tool_calls"``,
    ``"system"``, ``"turns"``); a run lacking one is reported as ``missing_input``.
    ``targets`` are the rule targets it can score (``run``, ``llm``, ``tool``,
    ``retrieval``, ``session``).
    """
    info = ScorerInfo(
        id=id,
        version=version,
        description=description,
        required_fields=tuple(requires),
        higher_is_better=higher_is_better,
        kind=kind,
        name=name or id,
        targets=tuple(targets),
    )
    return Scorer(info, options=options)
