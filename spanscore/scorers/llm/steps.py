"""Building blocks of the LLM scorers: judge steps, judge settings, and the shared text helpers.

A :class:`JudgeStep` is a scorer step (see ``scorers.base``) that renders a
prompt from the run, asks the judge for an answer of a given pydantic schema,
and returns the validated answer as plain JSON-ready data wrapped in a
``StepOutput`` carrying the prompt, model, tokens and cost. When the prompt
builder decides there is nothing to judge (no claims, no statements) it
returns ``None`` and the step yields its ``when_empty`` value without a call.
A failing judge raises; the exception carries what was spent so the result
still records tokens and cost, and the scorer never turns the failure into a
score.

Judged text always goes through :func:`delimit`, and the judge's system
prompt (``judge.DATA_RULE``) says delimited text is data, not instructions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from spanscore.redaction.scope import for_judge
from spanscore.run import Run
from spanscore.scorers import StepContext, StepOutput
from spanscore.scorers.bounds import capped
from spanscore.scorers.judge.answer_checks import ItemsExpected, check_for
from spanscore.scorers.judge.client import JudgeClient, JudgeConfig, JudgeError
from spanscore.scorers.judge.current import current_judge
from spanscore.scorers.llm.markers import defuse_markers

JudgeOverride = JudgeConfig | Mapping[str, Any] | str | None
PromptBuilder = Callable[[StepContext], str | None]
Expectation = Callable[[StepContext], list[ItemsExpected]]
"""What a step asked the judge to judge, from the same context its prompt was built from."""


@dataclass(frozen=True)
class JudgeSettings:
    """The judge a scorer uses, with per-step overrides, and the client that talks to it."""

    config: JudgeConfig
    step_overrides: Mapping[str, JudgeOverride] = field(default_factory=dict)
    client: JudgeClient = field(default_factory=lambda: current_judge().client)
    """The client of the judge the scorer was built with (``using_judge``) unless one is given."""

    def for_step(self, step: str) -> JudgeConfig:
        return self.config.with_overrides(self.step_overrides.get(step))


def judge_settings(
    *,
    model: str | None = None,
    judge: JudgeOverride = None,
    step_judges: Mapping[str, JudgeOverride] | None = None,
    client: JudgeClient | None = None,
) -> JudgeSettings:
    """Merge the judge being built with (``using_judge``), a scorer's ``judge`` override and its ``model`` shortcut.

    The built scorer keeps that judge's client, so it goes on using it wherever it is called from.
    """
    built_with = current_judge()
    config = built_with.config.with_overrides(judge)
    if model is not None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"option model must be a litellm model string, got {model!r}")
        config = config.with_overrides(model)
    overrides = dict(step_judges or {})
    for step, override in overrides.items():
        config.with_overrides(override)  # validate now, not on the first run
        if step not in ("preprocess", "analyze", "generate_reason"):
            raise ValueError(f"option step_judges: unknown step {step!r}; use preprocess, analyze or generate_reason")
    return JudgeSettings(config=config, step_overrides=overrides, client=client or built_with.client)


@dataclass(frozen=True, kw_only=True, eq=False)
class JudgeStep:
    """A scorer step answered by the judge; ``await step(context)`` gives a ``StepOutput``.

    A value: what to ask (instructions, prompt, schema) and how to read the answer; the judge is in ``settings``.
    """

    is_async = True

    scorer_id: str
    step: str
    settings: JudgeSettings
    instructions: str
    schema: type[BaseModel]
    prompt: PromptBuilder
    when_empty: Callable[[StepContext], Any] | None = None
    transform: Callable[[Any], Any] | None = None
    expect: Expectation | None = None

    async def __call__(self, context: StepContext) -> Any:
        prompt = self.prompt(context)
        if prompt is None:
            return self.when_empty(context) if self.when_empty is not None else None
        prompt = for_judge(prompt)  # the run's redaction policy, right before the text leaves (redaction.scope)
        config = self.settings.for_step(self.step)
        check = check_for(self.expect(context)) if self.expect is not None else None
        try:
            answer = await self.settings.client.ask(
                config,
                instructions=self.instructions,
                prompt=prompt,
                schema=self.schema,
                name=f"{self.scorer_id}_{self.step}",
                scorer=self.scorer_id,
                check=check,
            )
        except JudgeError as exc:
            spend = exc.spend
            exc.spent = StepOutput(  # type: ignore[attr-defined]
                value=None,
                prompt=prompt,
                judge_model=config.model,
                input_tokens=spend.input_tokens,
                output_tokens=spend.output_tokens,
                cost_usd=spend.cost_usd,
                judge_mode=spend.mode,
                cost_known=spend.cost_known,
            )
            raise
        value = answer.value.model_dump(mode="json")
        return StepOutput(
            value=self.transform(value) if self.transform is not None else value,
            prompt=prompt,
            judge_model=answer.model,
            input_tokens=answer.spend.input_tokens,
            output_tokens=answer.spend.output_tokens,
            cost_usd=answer.spend.cost_usd,
            judge_mode=answer.mode,
            cost_known=answer.spend.cost_known,
        )


def delimit(name: str, text: str) -> str:
    """Wrap judged text in the markers the judge is told to treat as data.

    Marker-like sequences inside the text (any case, spacing or look-alike characters) are defused first
    (``markers.defuse_markers``), so judged text can neither close its own block nor open a new one. A
    block longer than ``bounds.MAX_TEXT_CHARS`` is cut to it (and the cut recorded under ``name``): the
    judge is paid by the token, and no judge reads a megabyte closely.
    """
    return f"<<<BEGIN {name}>>>\n{defuse_markers(capped(text, name))}\n<<<END {name}>>>"


def numbered(name: str, items: Iterable[str]) -> str:
    """Delimit a list, one ``[index] item`` per entry, indices from 0."""
    return delimit(name, "\n".join(f"[{index}] {item}" for index, item in enumerate(items)))


def round2(value: float) -> float:
    """Round half up to two decimals, as the reference does (``Math.round((n + EPSILON) * 100) / 100``)."""
    return math.floor((value + 2.220446049250313e-16) * 100 + 0.5) / 100


def scale_option(scale: Any) -> float:
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"option scale must be a positive number, got {scale!r}")
    return float(scale)


def context_option(context: Any) -> tuple[str, ...] | None:
    if context is None:
        return None
    if isinstance(context, str) or not all(isinstance(c, str) for c in context):
        raise ValueError(f"option context must be a list of strings, got {context!r}")
    return tuple(context)


def run_context(run: Run, configured: tuple[str, ...] | None) -> list[str] | None:
    """The context to judge against; ``None`` when there is none at all.

    The ``context`` option wins, then the run's retrieved documents, then its tool results (each as text).
    ``spanscore.scorers.context_used`` names the same choice for the stored score; keep the two in step.
    """
    if configured is not None:
        return list(configured)
    if run.context is not None:
        return list(run.context)
    results = [_tool_result_text(call.name, call.result) for call in run.all_tool_calls if call.result is not None]
    return results or None


def _tool_result_text(name: str, result: str) -> str:
    return f"{name} returned: {result}"


def fraction(items: list[Mapping[str, Any]], key: str, value: str) -> float:
    """Share of ``items`` whose ``key`` equals ``value``; 0 for an empty list."""
    if not items:
        return 0.0
    return sum(1 for item in items if item.get(key) == value) / len(items)


def about_the_answer(ask: str) -> PromptBuilder:
    """A preprocess prompt over the run's answer: ``ask``, then the answer; None (no judge call) when it is empty."""

    def prompt(step: StepContext) -> str | None:
        text = step.run.output_text or ""
        return f"{ask}\n\n{delimit('answer', text)}" if text.strip() else None

    return prompt


def one_label_each(listed: str, field: str, label_field: str, labels: tuple[str, ...]) -> Expectation:
    """What the analyze step must answer: one labelled item per item the preprocess step listed, in order.

    ``listed`` names the preprocess list, ``field`` the answer's list, ``label_field`` and ``labels`` the label.
    """

    def expectation(step: StepContext) -> list[ItemsExpected]:
        count = len((step.preprocess_result or {}).get(listed) or [])
        return [ItemsExpected(field, count, label_field=label_field, labels=labels)]

    return expectation


def listed_reasons(items: list[Mapping[str, Any]], key: str, value: str, limit: int = 3) -> str:
    """Up to ``limit`` reasons of the items whose ``key`` is ``value``, for a short human reason."""
    reasons = [str(item.get("reason", "")).strip() for item in items if item.get(key) == value]
    reasons = [r for r in reasons if r][:limit]
    return "; ".join(reasons)


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class CombinedJudgeSteps:
    """Several judge steps run in turn as one scorer step; their answers merge into one dict, spend adds up.

    For a step whose parts must not see each other's material (summarization writes its coverage questions
    from the source without the summary in view, and answers them from the summary without the source).
    """

    is_async = True

    def __init__(self, *parts: JudgeStep) -> None:
        self.parts = parts

    async def __call__(self, context: StepContext) -> Any:
        merged: dict[str, Any] = {}
        outputs: list[StepOutput] = []
        for part in self.parts:
            try:
                output = await part(context)
            except JudgeError as exc:
                spent = getattr(exc, "spent", None)
                if isinstance(spent, StepOutput):
                    exc.spent = _combined([*outputs, spent], None)  # type: ignore[attr-defined]
                raise
            value = output.value if isinstance(output, StepOutput) else output
            if isinstance(output, StepOutput):
                outputs.append(output)
            merged.update(value or {})
        return _combined(outputs, merged)


def _combined(outputs: list[StepOutput], value: Any) -> StepOutput:
    prompts = [o.prompt for o in outputs if o.prompt]
    return StepOutput(
        value=value,
        prompt="\n\n-----\n\n".join(prompts) if prompts else None,
        judge_model=next((o.judge_model for o in outputs if o.judge_model), None),
        input_tokens=sum(o.input_tokens for o in outputs),
        output_tokens=sum(o.output_tokens for o in outputs),
        cost_usd=sum(o.cost_usd for o in outputs),
        judge_mode=next((o.judge_mode for o in reversed(outputs) if o.judge_mode), None),
        cost_known=all(o.cost_known for o in outputs),
    )
