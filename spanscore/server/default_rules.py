"""The rule ``spanscore serve`` loads when the configuration has no ``rules:`` key.

A newcomer who starts the service without a config file and sends traces
should see scores that mean something, not an empty ``scores`` table. The
default rule runs ``answer_health`` on every run: a local code scorer that
fails runs that visibly broke and passes the rest (no text leaves the machine). Any ``rules:`` key, even an empty list,
replaces it (``rules: []`` stores spans and scores nothing).
"""

from __future__ import annotations

from spanscore.config import ServiceConfig
from spanscore.sampling.rules import RuleConfig

DEFAULT_RULE = {
    "name": "default",
    "sample": 1.0,
    "scorers": ["answer_health"],
}
"""Documented in README (its opening) and docs/scorers.md ("answer_health"): every run, one local code scorer."""


def apply_default_rules(config: ServiceConfig) -> bool:
    """Give ``config`` the default rule when it names no rules at all; return whether it did."""
    if "rules" in config.model_fields_set:
        return False
    config.rules = [RuleConfig.model_validate(DEFAULT_RULE)]
    return True


def describe_rules(config: ServiceConfig) -> list[str]:
    """One line per loaded rule, or the reason nothing will be scored."""
    if not config.rules:
        return ["rules: none loaded, so nothing is scored (add rules: to the config; see docs/sampling.md)"]
    lines = []
    for rule in config.rules:
        scorers = ", ".join(spec.name for spec in rule.scorers)
        lines.append(f"rule {rule.name}: sample={rule.sample:g} scorers={scorers}")
    return lines
