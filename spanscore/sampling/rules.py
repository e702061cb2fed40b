"""Sampling rule configuration: validated once at start-up, every problem reported with its path.

A rule is a filter (``where``), the scorers to run, a sampling rate and
optional caps. ``load_sampling_config`` turns the YAML form into a frozen
``SamplingConfig`` whose filters are already compiled, or raises one
``ConfigError`` listing every problem as ``config: rules[2].sample must be
between 0 and 1, got 1.5``. The engine in ``engine.py`` consumes the result.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer, field_validator, model_validator
from pydantic_core import PydanticCustomError

from spanscore.errors import ConfigError
from spanscore.sampling.filters import MATCH_ALL, Filter, FilterError, parse_filter

# Errors of these types carry a message that reads on from the path without a colon.
_SENTENCE_ERRORS = frozenset({"sample_range"})
# Plainer words for pydantic's most common complaints about hand-written YAML.
_MESSAGES = {
    "extra_forbidden": "unknown key (check the spelling)",
    "missing": "required key is missing",
}


class ScorerSpec(BaseModel):
    """A scorer and its options; YAML may give a bare name or ``{name: ..., option: value}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="Scorer id as registered, e.g. faithfulness.")
    options: dict[str, Any] = Field(default_factory=dict, description="Passed to the scorer as keyword options.")

    @model_validator(mode="before")
    @classmethod
    def _from_short_form(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"name": value}
        if isinstance(value, Mapping) and "name" in value and set(value) != {"name", "options"}:
            return {"name": value["name"], "options": {k: v for k, v in value.items() if k != "name"}}
        return value


def _compile_filter(value: Any) -> Filter:
    """Pydantic hook: compile a filter, passing its problems on with paths relative to the field."""
    if isinstance(value, Filter):
        return value
    try:
        return parse_filter(value, path="")
    except FilterError as error:
        # The message reads on from the field's path for formatters that only print ``msg``;
        # ``describe_validation_error`` uses ``problems`` to give each one its full path.
        detail = "; ".join(
            f"{sub_path.lstrip('.')}: {message}" if sub_path else message for sub_path, message in error.problems
        )
        raise PydanticCustomError("filter", "{detail}", {"detail": detail, "problems": error.problems}) from None


class AlwaysConfig(BaseModel):
    """Overrides that score a run with probability 1 once it has passed the rule's ``where``."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    errors: bool = Field(default=False, description="Always score runs that ended in an error.")
    where: Filter | None = Field(default=None, description="Always score runs that match this filter too.")

    @field_validator("where", mode="before")
    @classmethod
    def _compile_where(cls, value: Any) -> Filter | None:
        return None if value is None else _compile_filter(value)

    @field_serializer("where")
    def _where_as_configured(self, where: Filter | None) -> Any:
        return None if where is None else where.source


class BudgetConfig(BaseModel):
    """A daily judge budget; set exactly one of the two limits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    daily_usd: float | None = Field(default=None, gt=0, description="Dollars of judge calls per UTC day.")
    daily_tokens: int | None = Field(default=None, gt=0, description="Judge tokens (in + out) per UTC day.")

    @model_validator(mode="after")
    def _exactly_one_limit(self) -> BudgetConfig:
        if (self.daily_usd is None) == (self.daily_tokens is None):
            raise PydanticCustomError("budget_limit", "set exactly one of daily_usd or daily_tokens")
        return self

    @property
    def limit(self) -> float:
        return float(self.daily_usd if self.daily_usd is not None else self.daily_tokens or 0)

    @property
    def unit(self) -> str:
        """``usd`` or ``tokens``: what spend reported to this budget is counted in."""
        return "usd" if self.daily_usd is not None else "tokens"


class RuleConfig(BaseModel):
    """One sampling rule."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    name: str = Field(
        min_length=1, max_length=200, description="Unique rule name; stored with every decision and score."
    )
    target: Literal["run", "llm", "tool", "retrieval", "session"] = Field(
        default="run",
        description="What the rule scores: agent runs, each LLM call, tool or retrieval span in them, or sessions.",
    )
    where: Filter = Field(default=MATCH_ALL, description="Which runs the rule considers; absent = all.")
    sample: float = Field(default=1.0, description="Probability of scoring a matching run, 0 to 1.")
    scorers: list[ScorerSpec] = Field(min_length=1, description="Scorers to run on sampled runs.")
    max_per_minute: int | None = Field(default=None, gt=0, description="Token-bucket cap on sampled runs.")
    always: AlwaysConfig = Field(default_factory=AlwaysConfig, description="Overrides scored at probability 1.")
    salt: str | None = Field(default=None, description="Draw independently of unsalted rules (breaks nesting).")
    budget: BudgetConfig | None = Field(default=None, description="Daily judge budget that lowers the rate.")
    redact: list[str] = Field(
        default_factory=list,
        description="Sets of the config's redact.sets masked in what this rule's judges are sent, on top of "
        "redact.default: a rule can add to the operator's redaction, never remove from it.",
    )

    @field_validator("redact", mode="before")
    @classmethod
    def _one_set_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("where", mode="before")
    @classmethod
    def _compile_where(cls, value: Any) -> Filter:
        return MATCH_ALL if value is None else _compile_filter(value)

    @field_serializer("where")
    def _where_as_configured(self, where: Filter) -> Any:
        """The filter as it was written: rule sets are compared, hashed and shown in their configured form."""
        return where.source

    @field_validator("name")
    @classmethod
    def _printable_name(cls, value: str) -> str:
        """A rule name lands in logs, metrics labels, the dashboard and terminals: no control characters."""
        bad = next((char for char in value if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")), None)
        if bad is not None:
            raise PydanticCustomError(
                "rule_name", "contains the control character {char} (names are printable text)", {"char": repr(bad)}
            )
        return value

    @field_validator("sample")
    @classmethod
    def _sample_in_range(cls, value: float) -> float:
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise PydanticCustomError("sample_range", "must be between 0 and 1, got {value}", {"value": value})
        return value


class SamplingConfig(BaseModel):
    """The sampling component's configuration: the rules, in evaluation order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rules: list[RuleConfig] = Field(default_factory=list, description="Sampling rules; each decides on its own.")
    remember_sampled: int = Field(
        default=100_000, ge=0, description="How many sampled (rule, run) pairs to remember to report duplicates."
    )

    @field_validator("rules")
    @classmethod
    def _unique_names(cls, rules: list[RuleConfig]) -> list[RuleConfig]:
        first_index: dict[str, int] = {}
        for index, rule in enumerate(rules):
            if rule.name in first_index:
                message = _duplicate_message(rule.name, first_index[rule.name], index)
                raise PydanticCustomError("duplicate_rule", "{message}", {"message": message})
            first_index[rule.name] = index
        return rules


def load_sampling_config(raw: Mapping[str, Any] | None, *, source: str = "config", prefix: str = "") -> SamplingConfig:
    """Validate the sampling section of a config file, or raise ``ConfigError`` listing every problem.

    ``source`` names the file in messages; ``prefix`` is the section's own
    path when it is nested (``sampling.`` gives ``sampling.rules[0].sample``).
    """
    try:
        return SamplingConfig.model_validate(raw or {})
    except ValidationError as error:
        problems = describe_validation_error(error, prefix=prefix)
        # Pydantic skips the uniqueness check while any rule is invalid; report it anyway.
        problems.extend(p for p in _duplicate_names(raw, prefix) if p not in problems)
        lines = [f"{source}: {line}" for line in problems]
        raise ConfigError("\n".join(lines)) from None


def _duplicate_names(raw: Mapping[str, Any] | None, prefix: str) -> list[str]:
    rules = raw.get("rules") if isinstance(raw, Mapping) else None
    if not isinstance(rules, list):
        return []
    first_index: dict[str, int] = {}
    problems = []
    for index, rule in enumerate(rules):
        name = rule.get("name") if isinstance(rule, Mapping) else None
        if not isinstance(name, str):
            continue
        if name in first_index:
            problems.append(f"{prefix}rules: {_duplicate_message(name, first_index[name], index)}")
        first_index.setdefault(name, index)
    return problems


def _duplicate_message(name: str, first: int, index: int) -> str:
    return f"rule name {name!r} is used by rules[{first}] and rules[{index}]; names must be unique"


def describe_validation_error(error: ValidationError, *, prefix: str = "") -> list[str]:
    """One ``path: message`` line per problem, with filter problems expanded to their own paths.

    Exposed so a config model that nests ``SamplingConfig`` formats its errors the same way.
    """
    lines: list[str] = []
    for detail in error.errors():
        path = prefix + _format_location(detail["loc"])
        if detail["type"] == "filter":
            lines.extend(f"{path}{sub_path}: {message}" for sub_path, message in detail["ctx"]["problems"])
        elif detail["type"] in _SENTENCE_ERRORS:
            lines.append(f"{path} {detail['msg']}")
        else:
            lines.append(f"{path}: {_MESSAGES.get(detail['type'], detail['msg'])}")
    return lines


def _format_location(location: Iterable[int | str]) -> str:
    text = ""
    for part in location:
        # Pydantic names union branches and short-form validators in the location; they are noise here.
        if isinstance(part, str) and (part.startswith("function-") or "[" in part):
            continue
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text
