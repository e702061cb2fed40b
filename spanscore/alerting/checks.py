"""Alerts that can never fire, found before the service runs: a scorer or a rule nobody scores.

An alert reads stored scores by scorer name and exact ``where`` values. A typo (``keyword_coverge``,
``rule: support-qualty``) is valid YAML and a valid alert, and it stays ``insufficient_data``
forever. ``spanscore config check`` and the ``serve`` banner list every alert with what it watches and
say which ones match nothing the configuration scores. These are warnings, not errors: an alert may
watch a feedback name posted to ``/api/v1/scores`` (``source: human``) or a rule that will arrive
through ``PUT /api/v1/rules``.
"""

from __future__ import annotations

from collections.abc import Sequence

from spanscore.alerting.config import AlertConfig
from spanscore.alerting.notify import channel_of
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers.preflight import CODE_SCORERS, LLM_SCORERS
from spanscore.spelling import did_you_mean


def describe_alerts(alerts: Sequence[AlertConfig]) -> list[str]:
    """One line per alert: what it watches and when it fires."""
    lines = []
    for alert in alerts:
        threshold = f"below {alert.below:g}" if alert.below is not None else f"above {alert.above:g}"
        where = "".join(f" {key}={value}" for key, value in sorted(alert.where.items()))
        targets = ", ".join(sorted({channel_of(target) for target in alert.notify})) or "no notification"
        lines.append(
            f"alert {alert.name}: {alert.aggregate} of {alert.scorer}{where} over {alert.window} {threshold} "
            f"(at least {alert.min_samples} scores) -> {targets}"
        )
    return lines


def never_firing(alerts: Sequence[AlertConfig], rules: Sequence[RuleConfig]) -> list[str]:
    """A warning for each alert that matches no scorer or no rule of this configuration."""
    scored = {spec.name for rule in rules for spec in rule.scorers}
    rule_names = {rule.name for rule in rules}
    warnings = []
    for index, alert in enumerate(alerts):
        outside = alert.where.get("source", "spanscore") != "spanscore"
        if alert.scorer not in scored and not outside:
            known = sorted(scored | CODE_SCORERS | LLM_SCORERS)
            warnings.append(
                f"alerts[{index}] ({alert.name}): no rule scores {alert.scorer!r}{_did_you_mean(alert.scorer, known)}; "
                "it can fire only on scores posted under that name (then add where: {source: <their source>})"
            )
        rule = alert.where.get("rule")
        if rule is not None and rule not in rule_names and not rule.startswith("source:"):
            warnings.append(
                f"alerts[{index}] ({alert.name}): where.rule {rule!r} names no rule of this config"
                f"{_did_you_mean(rule, sorted(rule_names))}; it can fire only once such a rule exists"
            )
    return warnings


def _did_you_mean(name: str, known: Sequence[str]) -> str:
    return did_you_mean(name, known)
