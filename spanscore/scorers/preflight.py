"""Checks on the scorers a configuration names, made before any scorer is built.

Two promises depend on them. A typo in a scorer id is reported at once: the
names are checked against a static list, without importing the LLM scorers
and the judge stack (litellm alone takes seconds to import). And no run's
text leaves the machine unless the user chose where it goes: every LLM
scorer needs a judge model named in the configuration (there is no implicit
default provider), and the API key that model needs must be present now, not
discovered by the first failing judge call an hour later. The service, the
offline ``score`` command and ``config check`` all run these checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from spanscore.errors import ConfigError
from spanscore.spelling import did_you_mean

CODE_SCORERS = frozenset(
    {
        "answer_health",
        "completeness",
        "content_similarity",
        "keyword_coverage",
        "repeated_tool_calls",
        "textual_difference",
        "tone_consistency",
        "tool_call_accuracy",
        "tool_calls_per_turn",
        "turn_count",
    }
)
"""Built-in scorers that run locally; a test keeps this list equal to what the registry holds."""

LLM_SCORERS = frozenset(
    {
        "answer_relevancy",
        "answer_similarity",
        "bias",
        "context_precision",
        "context_recall",
        "context_relevance",
        "conversation_goal_completion",
        "conversation_relevancy",
        "faithfulness",
        "hallucination",
        "knowledge_retention",
        "llm_judge",
        "noise_sensitivity",
        "prompt_alignment",
        "summarization",
        "tool_call_accuracy_llm",
        "toxicity",
        "user_frustration",
    }
)
"""Built-in scorers that send the run's text to a judge model."""

_SESSION = ("session",)
_CONTEXT = ("run", "llm", "retrieval")
_TOOL = ("run", "llm", "tool")
BUILTIN_TARGETS: Mapping[str, tuple[str, ...]] = {
    "turn_count": _SESSION,
    "tool_calls_per_turn": _SESSION,
    "repeated_tool_calls": _SESSION,
    "conversation_relevancy": _SESSION,
    "knowledge_retention": _SESSION,
    "conversation_goal_completion": _SESSION,
    "user_frustration": _SESSION,
    "context_precision": _CONTEXT,
    "context_relevance": _CONTEXT,
    "context_recall": _CONTEXT,
    "faithfulness": _CONTEXT,
    "hallucination": _CONTEXT,
    "tool_call_accuracy": _TOOL,
    "tool_call_accuracy_llm": _TOOL,
}
"""Rule targets of the built-ins that score more than runs and LLM calls (the rest: ``run``, ``llm``); a test keeps
it equal to what the built scorers declare, so ``config check`` refuses a wrong pairing without building them."""

_HOW_TO_CONFIGURE = (
    "add a judge section naming the model you choose, e.g. `judge: {model: openai/gpt-4o-mini, "
    "api_key_env: OPENAI_API_KEY}` (or `--judge-model` with `spanscore score`), or remove the scorer; "
    "spanscore sends no text to a model you did not name"
)
_HOW_TO_CONFIGURE_RUNNING = (
    "add a judge section naming the model you choose to the config file the service was started with "
    "(spanscore serve -c FILE), then restart it; a judge is operator config, so the rules API and a rules file's "
    "judge: never set one (docs/judge.md)"
)
RUNNING_SOURCES = ("PUT /api/v1/rules", "fleet")
"""Sources of rules applied to a running service (and a SIGHUP reload), whose judge is the one it started with."""


@dataclass(frozen=True, slots=True)
class ScorerUse:
    """One place a scorer is named: where (for messages), its id and its options."""

    where: str
    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    target: str = "run"
    rule: str = ""


def document_scorer_uses(document: Any) -> list[ScorerUse]:
    """The scorer names of a rules document (``{"rules": [...]}``) that has not been validated yet.

    Reports then list unknown scorers together with the document's other problems, not after them.
    """
    rules = document.get("rules") if isinstance(document, Mapping) else None
    uses = []
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        scorers = rule.get("scorers") if isinstance(rule, Mapping) else None
        for j, spec in enumerate(scorers if isinstance(scorers, list) else []):
            name = spec.get("name") if isinstance(spec, Mapping) else spec
            if isinstance(name, str) and name:
                uses.append(ScorerUse(f"rules[{i}].scorers[{j}]", name, {}))
    return uses


def unknown_scorer_problems(uses: Iterable[ScorerUse]) -> list[str]:
    return [f"{use.where}: {problem}" for use in uses if (problem := _unknown_name(use.name))]


def check_scorers(
    uses: Iterable[ScorerUse], judge: Mapping[str, Any], environ: Mapping[str, str], *, source: str = "config"
) -> None:
    """Raise ``ConfigError`` listing every unknown scorer id and every LLM scorer without a usable judge."""
    uses = list(uses)
    problems = unknown_scorer_problems(uses)
    problems.extend(f"{use.where}: {problem}" for use in uses if (problem := _wrong_target(use)))
    if not problems:
        for use in uses:
            if use.name in LLM_SCORERS:
                problems.extend(f"{use.where} ({use.name}): {p}" for p in _judge_problems(use, judge, environ))
    if source.startswith(RUNNING_SOURCES) or source.endswith("(SIGHUP)"):
        problems = [problem.replace(_HOW_TO_CONFIGURE, _HOW_TO_CONFIGURE_RUNNING) for problem in problems]
    if problems:
        raise ConfigError(f"{source}: " + "\n  ".join([f"{len(problems)} problem(s)", *problems]))


def _wrong_target(use: ScorerUse) -> str | None:
    if ":" in use.name or _unknown_name(use.name):
        return None  # a scorer from a module path declares its own targets, checked when it is built
    targets = BUILTIN_TARGETS.get(use.name, ("run", "llm"))
    if use.target in targets:
        return None
    return (
        f"rule {use.rule!r} has target {use.target!r}, which scorer {use.name!r} cannot score "
        f"(it scores: {', '.join(targets)})"
    )


def _unknown_name(name: str) -> str | None:
    if ":" in name or name in CODE_SCORERS or name in LLM_SCORERS:
        return None
    return unknown_scorer(name, CODE_SCORERS | LLM_SCORERS)


def unknown_scorer(name: str, known: Iterable[str]) -> str:
    """An unknown scorer id with the nearest known one, not the list of all of them."""
    hint = did_you_mean(name, known, cutoff=0.6)
    return f"unknown scorer {name!r}{hint}; docs/scorers.md lists every scorer (or use 'module:attribute' for your own)"


def _judge_problems(use: ScorerUse, judge: Mapping[str, Any], environ: Mapping[str, str]) -> list[str]:
    settings = _effective_judge(use.options, judge)
    model = settings.get("model")
    if not isinstance(model, str) or not model:
        return [f"an LLM judge scorer but no judge model is configured: {_HOW_TO_CONFIGURE}"]
    key_env = settings.get("api_key_env")
    if key_env:
        if not environ.get(str(key_env)):
            return [
                f"judge {model}: environment variable {key_env} (judge.api_key_env) is not set; "
                f"export it before starting, or point judge.api_key_file at a secret file"
            ]
        return []
    if settings.get("api_key_file") or settings.get("api_base"):
        return []
    missing = _missing_provider_keys(model, environ)
    if missing:
        names = ", ".join(missing)
        return [
            f"judge {model}: the provider needs {names}, which is not set; export it and set "
            f"judge.api_key_env: {missing[0]}, or set judge.api_base for a local OpenAI-compatible server"
        ]
    return []


def _effective_judge(options: Mapping[str, Any], judge: Mapping[str, Any]) -> dict[str, Any]:
    """The judge settings a scorer ends up with: the judge section, its ``judge`` override, its ``model``."""
    settings = dict(judge)
    override = options.get("judge")
    if isinstance(override, str):
        settings["model"] = override
    elif isinstance(override, Mapping):
        settings.update(override)
    if isinstance(options.get("model"), str):
        settings["model"] = options["model"]
    return settings


def _missing_provider_keys(model: str, environ: Mapping[str, str]) -> list[str]:
    """Ask litellm which variables the model's provider reads (its own table, not a copy of ours)."""
    from spanscore.scorers.judge.litellm_call import litellm

    report = litellm.validate_environment(model=model)
    missing = [str(name) for name in report.get("missing_keys") or () if not environ.get(str(name))]
    return missing


def rule_scorer_uses(rules: Iterable[Any]) -> list[ScorerUse]:
    """The scorers of configured rules (``RuleConfig`` objects), each with its ``rules[i].scorers[j]`` path."""
    return [
        ScorerUse(f"rules[{index}].scorers[{position}]", spec.name, spec.options, rule.target, rule.name)
        for index, rule in enumerate(rules)
        for position, spec in enumerate(rule.scorers)
    ]
