"""One way to write an LLM scorer: the judge options, the judge steps and the scorer around them.

Every LLM scorer takes the same judge options (``model``, ``judge``, ``step_judges``, ``client``: see
``JudgeOptions``) and builds the same two things from them: judge steps that share the scorer's id and
judge, and a scorer whose options record the model. ``judged_scorer`` registers a factory that receives an
``LlmBuild`` carrying both, so a scorer module says only its options, prompts, schemas and formula:

    @judged_scorer("bias")
    def bias(build: LlmBuild, *, scale: float = 1) -> Scorer:
        ...
        return build.scorer(description=..., requires=("output",), options={"scale": scale}).analyze(
            build.step("analyze", INSTRUCTIONS, Verdicts, prompt)
        )

The factory the registry sees takes the judge options and the scorer's own, by keyword; its signature is
the union of both, so an unknown option is still refused by name at config load.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from spanscore.scorers import StepContext
from spanscore.scorers.base import DEFAULT_TARGETS, Scorer, create_scorer
from spanscore.scorers.judge.client import JudgeClient
from spanscore.scorers.llm.steps import Expectation, JudgeOverride, JudgeSettings, JudgeStep, judge_settings
from spanscore.scorers.registry import register

JUDGE_STEPS = ("preprocess", "analyze", "generate_reason")


@dataclass(frozen=True)
class JudgeOptions:
    """The options every LLM scorer takes about its judge.

    ``model`` is a shortcut for ``judge: {model: ...}``; ``judge`` overrides the service's judge for this
    scorer; ``step_judges`` overrides it per step (``preprocess``, ``analyze``, ``generate_reason``);
    ``client`` is the judge client in Python use (never config data: see ``scorers.trust``).
    """

    model: str | None = None
    judge: JudgeOverride = None
    step_judges: Mapping[str, JudgeOverride] | None = None
    client: JudgeClient | None = None

    def settings(self) -> JudgeSettings:
        return judge_settings(model=self.model, judge=self.judge, step_judges=self.step_judges, client=self.client)


_OPTION_TYPES: dict[str, Any] = {
    "model": "str | None",
    "judge": "JudgeOverride",
    "step_judges": "Mapping[str, JudgeOverride] | None",
    "client": "JudgeClient | None",
}


class LlmBuild:
    """What an LLM scorer factory builds with: its id and its judge."""

    def __init__(self, scorer_id: str, settings: JudgeSettings) -> None:
        self.scorer_id = scorer_id
        self.settings = settings

    @property
    def model(self) -> str:
        return self.settings.config.model

    def step(
        self,
        step: str,
        instructions: str,
        schema: type[BaseModel],
        prompt: Callable[[StepContext], str | None],
        *,
        when_empty: Callable[[StepContext], Any] | None = None,
        expect: Expectation | None = None,
        transform: Callable[[Any], Any] | None = None,
    ) -> JudgeStep:
        """A step the judge answers, in ``schema``, to ``prompt`` under ``instructions``."""
        return JudgeStep(
            scorer_id=self.scorer_id,
            step=step,
            settings=self.settings,
            instructions=instructions,
            schema=schema,
            prompt=prompt,
            when_empty=when_empty,
            expect=expect,
            transform=transform,
        )

    def scorer(
        self,
        *,
        description: str,
        requires: tuple[str, ...],
        options: Mapping[str, Any],
        higher_is_better: bool = True,
        targets: tuple[str, ...] | None = None,
    ) -> Scorer:
        """The scorer, its options recorded with the judge model it was built with."""
        return create_scorer(
            self.scorer_id,
            description=description,
            requires=requires,
            higher_is_better=higher_is_better,
            kind="llm",
            options={**options, "model": self.model},
            targets=targets if targets is not None else DEFAULT_TARGETS,
        )


BuildFn = Callable[..., Scorer]


def judged_scorer(name: str, *, per_step: bool = True) -> Callable[[BuildFn], Callable[..., Scorer]]:
    """Register ``build(LlmBuild, **own options)`` as the factory of LLM scorer ``name``.

    ``per_step=False`` for scorers with a single judge call, which take no ``step_judges``.
    """

    def wrap(build: BuildFn) -> Callable[..., Scorer]:
        own = list(inspect.signature(build).parameters.values())[1:]
        judge_names = [n for n in _OPTION_TYPES if per_step or n != "step_judges"]
        clash = sorted({p.name for p in own} & set(judge_names))
        if clash:
            raise TypeError(f"scorer {name!r}: options {clash} are the judge options every LLM scorer takes")

        @functools.wraps(build)
        def factory(**options: Any) -> Scorer:
            if not per_step and options.get("step_judges"):
                raise TypeError(f"scorer {name!r} makes one judge call: it takes no step_judges")
            judge = JudgeOptions(**{key: options.pop(key, None) for key in _OPTION_TYPES})
            return build(LlmBuild(name, judge.settings()), **options)

        parameters = [
            inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_OPTION_TYPES[key])
            for key in judge_names
        ]
        factory.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [*parameters, *own], return_annotation=Scorer
        )
        return register(name)(factory)

    return wrap
