"""The running rule set: replaced whole, from the rules API or a SIGHUP re-read, checked before anything changes.

The service hands in how new rules take effect (``install``: swap them into live scoring, or start live
scoring with the first rules); this module owns the checks, the version history and the log of each change.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from spanscore.config import ServiceConfig, load_config
from spanscore.errors import ConfigError, RetryableError
from spanscore.redaction.config import RedactionPolicies, rule_redactors
from spanscore.sampling.rule_sets import RuleSet, canonical_rules, diff_rules
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.preflight import check_scorers, rule_scorer_uses

log = logging.getLogger(__name__)

InstallFn = Callable[[list[RuleConfig]], Awaitable[None]]


class RulePublisher(Protocol):
    """A fleet's shared rule set (``server.fleet_rules``): where a change goes before it is applied here."""

    async def publish(self, rules: list[RuleConfig], source: str) -> None: ...

    def describe(self) -> dict[str, Any]: ...


class RuleControl:
    """The active rules of one service and the two ways to replace them."""

    def __init__(self, config: ServiceConfig, install: InstallFn) -> None:
        self._config = config
        self._install = install
        self._lock = asyncio.Lock()
        self.rule_set = RuleSet.of(config.rules, source="config")
        self.operator_scorer_paths = import_paths(config.rules)
        """Import-path scorers the config file names: the only code an API rule may name (docs/security.md)."""
        self.reloads_failed = 0
        self.publisher: RulePublisher | None = None
        """Set in a fleet: a change from the API or a SIGHUP is published to every replica."""

    def describe(self) -> dict[str, Any]:
        """What ``GET /api/v1/rules`` answers: the active set, and in a fleet the fleet's version and replicas'."""
        found = self.rule_set.describe()
        if self.publisher is not None:
            found["fleet"] = self.publisher.describe()
        return found

    async def apply_rules(self, rules: Sequence[RuleConfig], *, source: str, publish: bool = True) -> RuleSet:
        """Score with ``rules`` from now on, or raise ``ConfigError`` listing every problem and change nothing.

        The new set is checked as at start-up (unknown scorers, LLM scorers without a usable judge) and every
        scorer is built before anything is swapped. A service started without rules starts live scoring here
        (recovering recent traces from storage, as at start).
        """
        async with self._lock:
            rules = list(rules)
            check_scorers(rule_scorer_uses(rules), self._config.judge, os.environ, source=source)
            rule_redactors(rules, RedactionPolicies(self._config.redact))  # ConfigError: a set the file lacks
            if publish and self.publisher is not None:
                await self.publisher.publish(rules, source)  # refused without Keeper: nothing changes
            old = canonical_rules(self.rule_set.rules)
            await self._install(rules)
            self._config.rules = rules
            self.rule_set = RuleSet.of(rules, generation=self.rule_set.generation + 1, source=source)
            change = diff_rules(old, canonical_rules(rules))
            log.info(
                "rules applied version=%s generation=%d source=%s change=%s",
                self.rule_set.version,
                self.rule_set.generation,
                source,
                "; ".join(change.lines()) or "none",
            )
            return self.rule_set

    async def reload_from(self, path: str) -> RuleSet | None:
        """SIGHUP: re-read the config file and apply its rules; on any problem keep the running rules and log why.

        Only the rules change while running; other sections that differ from the running config are named in
        a warning (they need a restart).
        """
        from spanscore.server.default_rules import apply_default_rules

        ignored: list[str] = []
        try:
            config = await asyncio.to_thread(load_config, path)
            ignored = changed_sections(self._config, config)
            apply_default_rules(config)
            applied = await self.apply_rules(config.rules, source=f"{path} (SIGHUP)")
            self.operator_scorer_paths = import_paths(config.rules)
        except (ConfigError, RetryableError) as exc:  # RetryableError: a fleet without Keeper publishes nothing
            self.reloads_failed += 1
            problems = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            if ignored:
                # The rules were checked against the running judge and sections, not the file's: say so first, or
                # a new judge: section reads as "no judge model is configured" while the file plainly has one.
                problems = (
                    f"changed on disk and applied only by a restart: {', '.join(ignored)}; the new rules were "
                    f"checked against the running config: {problems}"
                )
            log.error("rules not reloaded, the running rules (version %s) stay: %s", self.rule_set.version, problems)
            return None
        if ignored:
            log.warning("config sections changed on disk need a restart to take effect: %s", ", ".join(ignored))
        return applied


def changed_sections(running: ServiceConfig, on_disk: ServiceConfig) -> list[str]:
    """Top-level sections other than ``rules`` that differ between the running config and the file."""
    return [
        name
        for name in type(running).model_fields
        if name != "rules" and getattr(running, name) != getattr(on_disk, name)
    ]


def import_paths(rules: Sequence[RuleConfig]) -> frozenset[str]:
    """The import-path scorers a config file names: code the operator chose, which API rules may reuse."""
    return frozenset(spec.name for rule in rules for spec in rule.scorers if ":" in spec.name)
