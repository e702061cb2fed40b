"""Rule sets that change while the service runs: parse, validate whole, version by content, compare.

A running service swaps its rules when the config file is re-read (SIGHUP) or a new set is PUT to the
API. Either way the new set is parsed and validated as a whole first; any problem leaves the old set in
place. The version is a hash of the set's canonical form (every rule as the config model sees it, with
defaults filled in), so two replicas given the same rules, by file or by API, report and store the same
version whatever order of keys or short forms the documents used. The counter (``generation``) says how
many sets this process has applied; it is shown, not stored, because it differs between replicas.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spanscore.errors import ConfigError
from spanscore.sampling.rules import RuleConfig, load_sampling_config

VERSION_CHARS = 12
"""Hex characters of the content hash kept as the version: collisions among a deployment's rule sets are not a
concern at 48 bits, and the value stays short enough to read in a dashboard column."""


def canonical_rules(rules: Sequence[RuleConfig]) -> list[dict[str, Any]]:
    """The rules as plain data, defaults filled in and filters in their configured form.

    An empty ``redact`` is left out, so that rule sets written before redaction keep their version.
    """
    return [rule.model_dump(mode="json", exclude={"redact"} if not rule.redact else None) for rule in rules]


def rule_set_version(rules: Sequence[RuleConfig]) -> str:
    """Content hash of a rule set; rule order counts (it is the order decisions are made and shown in)."""
    text = json.dumps(canonical_rules(rules), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:VERSION_CHARS]


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The rules a service scores with, and where they came from."""

    rules: tuple[RuleConfig, ...]
    version: str
    generation: int = 1
    source: str = "config"
    applied_at: float = field(default_factory=time.time)

    @classmethod
    def of(cls, rules: Sequence[RuleConfig], *, generation: int = 1, source: str = "config") -> RuleSet:
        return cls(tuple(rules), rule_set_version(rules), generation, source)

    def describe(self) -> dict[str, Any]:
        """What ``GET /api/v1/rules`` answers."""
        return {
            "version": self.version,
            "generation": self.generation,
            "source": self.source,
            "applied_at": self.applied_at,
            "rules": canonical_rules(self.rules),
        }


def parse_rules_document(document: Any, *, source: str) -> list[RuleConfig]:
    """The ``rules:`` list of a document (``{"rules": [...]}``), validated whole; ``ConfigError`` lists every problem.

    Only the ``rules`` key is accepted: a document with other keys is refused rather than half applied, so a
    whole config file sent by mistake says so instead of silently changing only its rules.
    """
    if not isinstance(document, Mapping):
        raise ConfigError(f"{source}: expected an object with a 'rules' list, got {type(document).__name__}")
    others = sorted(str(key) for key in document if key != "rules")
    problems = [f"{source}: unexpected key(s) {others}; send only 'rules'"] if others else []
    if "rules" not in document:
        problems.append(f"{source}: 'rules' is missing (send an empty list to remove every rule)")
    elif not isinstance(document["rules"], list):
        problems.append(f"{source}: 'rules' must be a list, got {type(document['rules']).__name__}")
    if problems:
        raise ConfigError("\n".join(problems))
    return list(load_sampling_config({"rules": document["rules"]}, source=source).rules)


@dataclass(frozen=True, slots=True)
class RuleSetDiff:
    """Rule names added, removed and changed between two sets (a reorder alone is ``reordered``)."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    reordered: bool

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.reordered)

    def lines(self) -> list[str]:
        out = [f"+ {name}" for name in self.added]
        out += [f"- {name}" for name in self.removed]
        out += [f"~ {name}" for name in self.changed]
        if self.reordered:
            out.append("rule order changed (decisions are listed in rule order)")
        return out


def diff_rules(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> RuleSetDiff:
    """Compare two rule sets in canonical form (``canonical_rules`` or the API's ``rules``)."""
    old_by_name = {str(rule["name"]): dict(rule) for rule in old}
    new_by_name = {str(rule["name"]): dict(rule) for rule in new}
    kept = [name for name in old_by_name if name in new_by_name]
    return RuleSetDiff(
        added=tuple(name for name in new_by_name if name not in old_by_name),
        removed=tuple(name for name in old_by_name if name not in new_by_name),
        changed=tuple(name for name in kept if old_by_name[name] != new_by_name[name]),
        reordered=kept != [name for name in new_by_name if name in old_by_name],
    )
