r"""Custom judge scorers (Mastra's ``createLLMScorer``), from Python or from the config file.

A custom judge scorer has judge instructions, an optional ``extract`` step,
a required ``analyze`` step, an optional ``reason`` step (each a prompt plus
an output schema, each optionally with its own judge), and a score function
computed from the analysis. In Python every piece can be code::

    scorer = create_llm_scorer(
        "politeness",
        instructions="You rate customer-service answers.",
        analyze=LLMStep(prompt="Is this answer polite?\\n{output}", schema=Politeness),
        score=lambda step: 1.0 if step.analyze_result["polite"] else 0.0,
    )

From the config (``build("llm_judge", id=..., ...)``) prompts are templates,
schemas are JSON schemas and the score is either an import path
(``package.module:function``) or one of three declarative rules applied to
the analysis: ``{fraction: {items, field, equals}}``, ``{mean: {items,
field}}`` or ``{field: name}``, each with an optional ``scale``.

Template placeholders: ``{input}``, ``{output}``, ``{system}``,
``{context}``, ``{ground_truth}``, ``{turns}`` (a session's numbered turns,
for ``targets: [session]``), ``{health}`` (what ``answer_health`` found wrong with
the run, or that it found nothing: a judge sampled next to it starts from
what the local checks already know), ``{extract}`` / ``{analysis}`` (earlier
steps' answers as JSON) and ``{score}``. Every value is inserted delimited, as
data, with marker look-alikes defused, so an extracted string cannot close its
block and speak to the judge. ``{context}`` is the context the built-in
scorers use: the run's retrieved documents, else its tool results. Only these
exact tokens are replaced, so braces elsewhere in a prompt are left alone.

A step may say what it asks the judge to judge (``expect``), so the judge
client checks the answer like a built-in's (``judge_checks``): in Python a
function of the step context returning ``ItemsExpected`` rules, in the config
``{items: <answer list field>, one_per: context | extract.<list field>,
index_field: <optional>, label: <optional field whose schema enum gives the
allowed labels>}``. Declarative scores are rounded to two decimals like the
built-ins'.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, create_model

from spanscore.scorers import Scorer, StepContext, create_scorer
from spanscore.scorers.base import DEFAULT_TARGETS
from spanscore.scorers.code.answer_health import health_findings
from spanscore.scorers.judge.client import JudgeClient
from spanscore.scorers.llm.builder import LlmBuild
from spanscore.scorers.llm.conversation import transcript
from spanscore.scorers.llm.custom_checks import configured_expectation
from spanscore.scorers.llm.steps import (
    Expectation,
    JudgeOverride,
    JudgeSettings,
    JudgeStep,
    delimit,
    judge_settings,
    numbered,
    round2,
    run_context,
)
from spanscore.scorers.registry import register

ScoreFunction = Callable[[StepContext], float]


@dataclass(frozen=True)
class LLMStep:
    """One judge step of a custom scorer: a prompt (template or function), an answer schema, an optional judge."""

    prompt: str | Callable[[StepContext], str]
    schema: type[BaseModel] | Mapping[str, Any]
    judge: JudgeOverride = None
    description: str = ""
    expect: Expectation | None = None


class ReasonAnswer(BaseModel):
    reason: str


def create_llm_scorer(
    id: str,
    *,
    instructions: str,
    analyze: LLMStep | Mapping[str, Any],
    score: ScoreFunction | str | Mapping[str, Any],
    extract: LLMStep | Mapping[str, Any] | None = None,
    reason: LLMStep | Mapping[str, Any] | None = None,
    description: str = "",
    model: str | None = None,
    judge: JudgeOverride = None,
    client: JudgeClient | None = None,
    requires: Sequence[str] = ("output",),
    higher_is_better: bool = True,
    version: str = "1",
    targets: Sequence[str] = DEFAULT_TARGETS,
) -> Scorer:
    """Build a judge scorer from instructions, steps and a score function (see the module docstring)."""
    if not isinstance(instructions, str) or not instructions.strip():
        raise ValueError(f"custom scorer {id!r} needs judge instructions (a non-empty string)")
    settings = judge_settings(model=model, judge=judge, client=client)
    steps = {"preprocess": extract, "analyze": analyze, "generate_reason": reason}
    built: dict[str, JudgeStep] = {}
    for step_name, spec in steps.items():
        if spec is not None:
            built[step_name] = _judge_step(id, step_name, _as_step(id, step_name, spec), settings, instructions)
    scorer = create_scorer(
        id,
        version=version,
        description=description,
        requires=tuple(requires),
        higher_is_better=higher_is_better,
        kind="llm",
        options={"model": settings.config.model},
        targets=tuple(targets),
    )
    if "preprocess" in built:
        scorer = scorer.preprocess(built["preprocess"])
    scorer = scorer.analyze(built["analyze"]).generate_score(_score_function(id, score))
    if "generate_reason" in built:
        scorer = scorer.generate_reason(built["generate_reason"])
    return scorer


llm_judge = register("llm_judge")(create_llm_scorer)
"""A custom judge scorer defined in the config file: the same builder, its steps and score given as mappings."""


def _as_step(scorer_id: str, step: str, spec: LLMStep | Mapping[str, Any]) -> LLMStep:
    if isinstance(spec, LLMStep):
        return spec
    if not isinstance(spec, Mapping) or "prompt" not in spec:
        raise ValueError(f"custom scorer {scorer_id!r}: step {step} needs a prompt")
    unknown = sorted(set(spec) - {"prompt", "schema", "output_schema", "judge", "description", "expect"})
    if unknown:
        raise ValueError(f"custom scorer {scorer_id!r}: step {step} has unknown key(s) {unknown}")
    schema = spec.get("schema", spec.get("output_schema"))
    if schema is None:
        if step != "generate_reason":
            raise ValueError(f"custom scorer {scorer_id!r}: step {step} needs a schema (a JSON schema object)")
        schema = ReasonAnswer
    expect = spec.get("expect")
    return LLMStep(
        prompt=spec["prompt"],
        schema=schema,
        judge=spec.get("judge"),
        description=spec.get("description", ""),
        expect=configured_expectation(f"custom scorer {scorer_id!r}: step {step}", expect, schema)
        if expect is not None
        else None,
    )


def _judge_step(scorer_id: str, step: str, spec: LLMStep, settings: JudgeSettings, instructions: str) -> JudgeStep:
    schema = spec.schema if isinstance(spec.schema, type) else schema_model(f"{scorer_id}_{step}", spec.schema)
    if step == "generate_reason" and "reason" not in schema.model_fields:
        raise ValueError(f"custom scorer {scorer_id!r}: the reason step's schema needs a 'reason' string field")
    step_settings = JudgeSettings(settings.config.with_overrides(spec.judge), client=settings.client)
    prompt = spec.prompt if callable(spec.prompt) else _template(spec.prompt)
    transform = (lambda value: value["reason"]) if step == "generate_reason" else None
    return LlmBuild(scorer_id, step_settings).step(
        step, instructions, schema, prompt, transform=transform, expect=spec.expect
    )


def _template(text: str) -> Callable[[StepContext], str]:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a step prompt must be a non-empty string, got {text!r}")

    def render(step: StepContext) -> str:
        run = step.run
        values: dict[str, Callable[[], str]] = {
            "{input}": lambda: delimit("input", run.input_text or ""),
            "{output}": lambda: delimit("output", run.output_text or ""),
            "{system}": lambda: delimit("system", run.system or ""),
            "{context}": lambda: numbered("context", run_context(run, None) or ()),
            "{ground_truth}": lambda: delimit("ground_truth", run.ground_truth or ""),
            "{turns}": lambda: transcript(run.turns or ()),
            "{health}": lambda: delimit("answer_health", health_findings(run)),
            "{extract}": lambda: delimit("extract", json.dumps(step.preprocess_result, ensure_ascii=False)),
            "{analysis}": lambda: delimit("analysis", json.dumps(step.analyze_result, ensure_ascii=False)),
            "{score}": lambda: delimit("score", str(step.score)),
        }
        rendered = text
        for token, value in values.items():
            if token in rendered:
                rendered = rendered.replace(token, value())
        return rendered

    return render


def _score_function(scorer_id: str, score: ScoreFunction | str | Mapping[str, Any]) -> ScoreFunction:
    if isinstance(score, str):
        return _imported(scorer_id, score)
    if isinstance(score, Mapping):
        return _declared(scorer_id, score)
    if callable(score):
        return score
    raise ValueError(f"custom scorer {scorer_id!r}: score must be a function, an import path or a rule mapping")


def _imported(scorer_id: str, path: str) -> ScoreFunction:
    module_name, _, attribute = path.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(f"custom scorer {scorer_id!r}: cannot load score function {path!r} ({exc})") from exc
    if not callable(function):
        raise ValueError(f"custom scorer {scorer_id!r}: {path!r} is not callable")
    return function  # type: ignore[no-any-return]


def _declared(scorer_id: str, rule: Mapping[str, Any]) -> ScoreFunction:
    scale = float(rule.get("scale", 1.0))
    kinds = [k for k in ("fraction", "mean", "field") if k in rule]
    if len(kinds) != 1:
        raise ValueError(
            f"custom scorer {scorer_id!r}: score rule needs exactly one of fraction, mean, field; got {dict(rule)}"
        )
    kind, spec = kinds[0], rule[kinds[0]]

    def compute(step: StepContext) -> float:
        analysis = step.analyze_result or {}
        if kind == "field":
            return round2(float(analysis[spec]) * scale)
        items = analysis.get(spec["items"]) or []
        if not items:
            return 0.0
        if kind == "fraction":
            return round2(sum(1 for item in items if item.get(spec["field"]) == spec["equals"]) / len(items) * scale)
        return round2(sum(float(item[spec["field"]]) for item in items) / len(items) * scale)

    return compute


_JSON_TYPES: dict[str, Any] = {"string": str, "number": float, "integer": int, "boolean": bool}


def schema_model(name: str, schema: Mapping[str, Any]) -> type[BaseModel]:
    """A pydantic model for a (simple) JSON schema: objects, arrays, scalars, enums, nullable types."""
    if schema.get("type") != "object":
        raise ValueError(f"{name}: a step schema must be a JSON schema of type object, got {schema.get('type')!r}")
    required = set(schema.get("required", ()))
    fields: dict[str, Any] = {}
    for key, child in (schema.get("properties") or {}).items():
        annotation = _annotation(f"{name}_{key}", child)
        fields[key] = (annotation, ...) if key in required else (annotation | None, None)
    model: type[BaseModel] = create_model(name, **fields)
    return model


def _annotation(name: str, schema: Mapping[str, Any]) -> Any:
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        inner = _annotation(name, {**schema, "type": others[0] if others else "string"})
        return inner | None if "null" in kind else inner
    if kind == "object":
        return schema_model(name, schema) if schema.get("properties") else dict[str, Any]
    if kind == "array":
        return list[_annotation(name, schema.get("items") or {})]  # type: ignore[misc]
    if kind in _JSON_TYPES:
        return _JSON_TYPES[kind]
    return Any
