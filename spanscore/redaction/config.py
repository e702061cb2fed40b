"""The ``redact:`` section: named detector sets, the one every judge rule gets, and what a rule may add.

The policy is the operator's: it lives in the config file only. A rule (from the file or from
``PUT /api/v1/rules``) may name sets of the file in its own ``redact:``, and those are added to the
default, never put in its place, so a token holder can make a rule mask more but never less::

    redact:
      default: standard            # absent: every built-in detector
      phone_regions: [US, GB, DE]  # whose national formats are read (numbers without a country code)
      sets:
        standard: {detectors: [email, phone, card, iban, national_id, ip, secret, url_credentials]}
        billing:
          detectors: [card, iban]
          patterns: {order_ref: "ORD-[0-9]{8}"}     # custom:order_ref, RE2
          words: {codenames: [Kestrel, Bluebird]}   # custom:codenames, whole words, any case
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from phonenumbers import SUPPORTED_REGIONS
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from spanscore.errors import ConfigError
from spanscore.redaction.detectors import (
    BUILTIN_DETECTORS,
    DEFAULT_PHONE_REGIONS,
    Detector,
    builtin_detectors,
    pattern_detector,
    words_detector,
)
from spanscore.redaction.redactor import Redactor

ALL = "all"
"""The set of every built-in detector; always defined, and the default when ``redact.default`` is absent."""


class RedactSetConfig(BaseModel):
    """One named set: built-in detectors by name, plus the operator's own patterns and word lists."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    detectors: list[str] = Field(default_factory=lambda: list(BUILTIN_DETECTORS))
    patterns: dict[str, str] = Field(default_factory=dict, description="custom:<name> -> RE2 pattern.")
    words: dict[str, list[str]] = Field(default_factory=dict, description="custom:<name> -> exact words.")

    @field_validator("detectors")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        unknown = [name for name in names if name not in BUILTIN_DETECTORS]
        if unknown:
            raise ValueError(f"unknown detector(s) {unknown}: use any of {', '.join(BUILTIN_DETECTORS)}")
        return names

    @model_validator(mode="after")
    def _custom_compiles(self) -> RedactSetConfig:
        both = set(self.patterns) & set(self.words)
        if both:
            raise ValueError(f"{sorted(both)} named in both patterns and words: each custom name is one detector")
        for name, pattern in self.patterns.items():
            pattern_detector(name, pattern)  # ValueError names the pattern and RE2's reason
        for name, words in self.words.items():
            words_detector(name, words)
        return self


class RedactConfig(BaseModel):
    """What is masked in run text before it goes to a judge (docs/security.md, "Redaction")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default: str = Field(default=ALL, description="The set every judge rule gets; rules may only add to it.")
    phone_regions: list[str] = Field(
        default_factory=lambda: list(DEFAULT_PHONE_REGIONS),
        min_length=1,
        description="Regions (ISO 3166 codes) whose national phone formats are read; the first that fits wins.",
    )

    @field_validator("phone_regions")
    @classmethod
    def _known_regions(cls, regions: list[str]) -> list[str]:
        unknown = [region for region in regions if region.upper() not in SUPPORTED_REGIONS]
        if unknown:
            raise ValueError(f"unknown region(s) {unknown}: use ISO 3166 alpha-2 codes such as US, GB, DE")
        return [region.upper() for region in regions]

    sets: dict[str, RedactSetConfig] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _default_is_defined(self) -> RedactConfig:
        if ALL in self.sets:
            raise ValueError(f"redact.sets: {ALL!r} is the built-in set of every detector; pick another name")
        if self.default != ALL and self.default not in self.sets:
            raise ValueError(f"redact.default: no set named {self.default!r}; define it under redact.sets")
        return self


class RedactionPolicies:
    """The compiled policy: a ``Redactor`` per combination of sets a rule asks for, built once and shared."""

    def __init__(self, config: RedactConfig | None = None) -> None:
        self.config = config or RedactConfig()
        self._builtins = builtin_detectors(tuple(self.config.phone_regions))
        self._cache: dict[tuple[str, ...], Redactor] = {}

    def unknown_sets(self, names: Iterable[str]) -> list[str]:
        return [name for name in names if name != ALL and name not in self.config.sets]

    def for_rule(self, added: Sequence[str] = ()) -> Redactor:
        """The default set plus ``added`` (set names): a rule can only widen what is masked."""
        self._refuse_unknown(added)
        key = tuple(sorted({self.config.default, *added}))
        redactor = self._cache.get(key)
        if redactor is None:
            redactor = Redactor(self._detectors(key))
            self._cache[key] = redactor
        return redactor

    def only(self, name: str) -> Redactor:
        """One set on its own, without the default: what ``spanscore redact --policy NAME`` shows."""
        self._refuse_unknown([name])
        return Redactor(self._detectors((name,)))

    def _refuse_unknown(self, names: Sequence[str]) -> None:
        unknown = self.unknown_sets(names)
        if unknown:
            sets = ", ".join(self.set_names())
            raise ConfigError(f"redact: no set named {unknown[0]!r} in the config file; the sets are {sets}")

    def set_names(self) -> list[str]:
        return [ALL, *self.config.sets]

    def _detectors(self, set_names: Sequence[str]) -> list[Detector]:
        builtin: set[str] = set()
        custom: dict[str, Detector] = {}
        for name in set_names:
            spec = RedactSetConfig() if name == ALL else self.config.sets[name]
            builtin.update(spec.detectors)
            for custom_name, pattern in spec.patterns.items():
                custom.setdefault(custom_name, pattern_detector(custom_name, pattern))
            for custom_name, words in spec.words.items():
                custom.setdefault(custom_name, words_detector(custom_name, words))
        ordered = [detector for name, detector in self._builtins.items() if name in builtin]
        return [*ordered, *custom.values()]


class RuleWithRedaction(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def redact(self) -> list[str]: ...


def rule_redaction_problems(rules: Sequence[RuleWithRedaction], policies: RedactionPolicies) -> list[str]:
    """One line per set a rule names that the config file does not define (a rule cannot define its own)."""
    return [
        f"rules[{index}].redact: no set named {name!r} under redact.sets in the config file (sets: "
        f"{', '.join(policies.set_names())}); a rule may add the operator's sets to redact.default, not define one"
        for index, rule in enumerate(rules)
        for name in policies.unknown_sets(rule.redact)
    ]


def rule_redactors(rules: Sequence[RuleWithRedaction], policies: RedactionPolicies) -> dict[str, Redactor]:
    """Each rule's ``Redactor``, or ``ConfigError`` listing every rule that names a set that does not exist."""
    problems = rule_redaction_problems(rules, policies)
    if problems:
        raise ConfigError("\n".join(problems))
    return {rule.name: policies.for_rule(rule.redact) for rule in rules}
