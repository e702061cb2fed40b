"""The agent name a user gives runs whose spans name none: a resource attribute, or a config rule.

Some frameworks' traces carry no agent name at all (DSPy's root is ``ReAct.forward``, Haystack's
``Agent.run``), so a rule filtered on ``agent.name`` selects nothing. The process can name itself with
the resource attribute ``gen_ai.agent.name`` (``OTEL_RESOURCE_ATTRIBUTES=gen_ai.agent.name=weather-bot``,
no code change), or the operator can name runs by span name or service in
``collector.runs.agent_names``. Both come after any name the spans give, and before a name only guessed
from a span's own name (smolagents' ``NAME.run``): they are the user's word, the guess is not.
"""

from __future__ import annotations

from collections.abc import Sequence

from spanscore.records import SpanRecord
from spanscore.runs.config import AgentNameRule, RunsConfig

RESOURCE_KEY = "gen_ai.agent.name"


def given_agent_name(spans: Sequence[SpanRecord], config: RunsConfig) -> tuple[str, str] | None:
    """``(name, source)`` for a run's spans (its root first), or None when the user gave no name for it."""
    for span in spans:
        name = span.resource_attributes.get(RESOURCE_KEY)
        if name:
            return name, f"resource attribute {RESOURCE_KEY}"
    if not spans:
        return None
    names = {span.name for span in spans}
    root = spans[0]
    service = root.service_name or root.resource_attributes.get("service.name") or ""
    for index, rule in enumerate(config.agent_names):
        if _matches(rule, names, service):
            return rule.agent, f"config collector.runs.agent_names[{index}] ({_described(rule)})"
    return None


def _matches(rule: AgentNameRule, span_names: set[str], service: str) -> bool:
    if rule.span_name is not None and rule.span_name not in span_names:
        return False
    return rule.service_name is None or rule.service_name == service


def _described(rule: AgentNameRule) -> str:
    matchers = [f"span name {rule.span_name!r}"] if rule.span_name is not None else []
    if rule.service_name is not None:
        matchers.append(f"service {rule.service_name!r}")
    return ", ".join(matchers)
