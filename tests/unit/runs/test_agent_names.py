"""An agent name for runs whose framework gives none (#29).

DSPy (root ``ReAct.forward``) and Haystack (``Agent.run``) name no agent, so a rule filtered on
``agent.name`` selected nothing. Two ways give such a run a name: the resource attribute
``gen_ai.agent.name`` (``OTEL_RESOURCE_ATTRIBUTES=gen_ai.agent.name=weather-bot``), and a config rule
``collector.runs.agent_names`` matching a span name or service. A name the spans give always wins.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from spanscore.collector.decode import parse_traces, spans_from_request
from spanscore.config import load_config
from spanscore.errors import ConfigError
from spanscore.records import SpanRecord
from spanscore.run import Run
from spanscore.runs.assembly import runs_from_spans
from spanscore.runs.config import AgentNameRule, RunsConfig
from spanscore.sampling.filters import parse_filter
from tests.conftest import write_config

QUESTION = "What is the weather in Paris?"


def trace(
    root_name: str = "ReAct.forward",
    *,
    resource: dict[str, str] | None = None,
    service: str = "dspy-app",
    root_attributes: dict[str, str] | None = None,
) -> list[SpanRecord]:
    """A DSPy-shaped trace: a CHAIN root that names no agent, a model call inside."""
    common = functools.partial(SpanRecord, trace_id="e" * 32, kind="Internal", service_name=service)
    resource_attributes = {"service.name": service, **(resource or {})}
    root = common(
        span_id="1" * 16,
        parent_span_id="",
        name=root_name,
        start_time_ns=1,
        end_time_ns=9,
        resource_attributes=resource_attributes,
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"question": QUESTION}),
            "input.mime_type": "application/json",
            "output.value": json.dumps({"answer": "Sunny."}),
            "output.mime_type": "application/json",
            **(root_attributes or {}),
        },
    )
    inner = common(
        span_id="2" * 16,
        parent_span_id="1" * 16,
        name="Predict(StringSignature).forward",
        start_time_ns=2,
        end_time_ns=3,
        resource_attributes=resource_attributes,
        attributes={"openinference.span.kind": "CHAIN"},
    )
    return [root, inner]


def only_run(spans: list[SpanRecord], config: RunsConfig | None = None) -> Run:
    (run,) = runs_from_spans(spans, config=config)
    return run


def selected(run: Run, name: str) -> bool:
    """Whether a rule's ``where: {agent.name: NAME}`` selects the run (the filter rules use)."""
    return parse_filter({"agent.name": name}).matches(run)


def test_without_a_name_a_filter_on_agent_name_selects_nothing() -> None:
    run = only_run(trace())
    assert run.agent_name is None and not selected(run, "weather-bot")


def test_a_config_rule_names_the_agent_by_span_name_and_rules_can_select_it() -> None:
    config = RunsConfig(agent_names=(AgentNameRule(span_name="ReAct.forward", agent="weather-bot"),))
    run = only_run(trace(), config)
    assert run.agent_name == "weather-bot"
    assert run.sources["agent_name"] == "config collector.runs.agent_names[0] (span name 'ReAct.forward')"
    assert selected(run, "weather-bot") and parse_filter({"gen_ai.agent.name": "weather-bot"}).matches(run)


def test_a_rule_matches_a_span_inside_the_run_and_by_service() -> None:
    inner = RunsConfig(agent_names=(AgentNameRule(span_name="Predict(StringSignature).forward", agent="inner"),))
    assert only_run(trace(), inner).agent_name == "inner"
    by_service = RunsConfig(
        agent_names=(
            AgentNameRule(service_name="other-app", agent="other"),
            AgentNameRule(service_name="dspy-app", agent="dspy-bot"),
        )
    )
    run = only_run(trace(), by_service)
    assert run.agent_name == "dspy-bot" and "agent_names[1]" in run.sources["agent_name"]
    both = RunsConfig(agent_names=(AgentNameRule(span_name="ReAct.forward", service_name="other-app", agent="x"),))
    assert only_run(trace(), both).agent_name is None  # every matcher of a rule must match


def test_the_resource_attribute_names_the_agent() -> None:
    run = only_run(trace(resource={"gen_ai.agent.name": "weather-bot"}))
    assert run.agent_name == "weather-bot"
    assert run.sources["agent_name"] == "resource attribute gen_ai.agent.name"
    assert selected(run, "weather-bot")


def test_a_name_the_spans_give_wins_then_the_resource_then_the_config() -> None:
    config = RunsConfig(agent_names=(AgentNameRule(span_name="ReAct.forward", agent="from-config"),))
    named = trace(
        resource={"gen_ai.agent.name": "from-resource"},
        root_attributes={"openinference.span.kind": "AGENT", "agent.name": "from-span"},
    )
    assert only_run(named, config).agent_name == "from-span"
    assert only_run(trace(resource={"gen_ai.agent.name": "from-resource"}), config).agent_name == "from-resource"


def test_an_explicit_name_comes_before_a_name_guessed_from_a_span_name() -> None:
    """smolagents' ``NAME.run`` suggests an agent; a configured name is the user's word and wins."""
    spans = trace("weather_agent.run", root_attributes={"openinference.span.kind": "AGENT"})
    assert only_run(spans).agent_name == "weather_agent"
    config = RunsConfig(agent_names=(AgentNameRule(span_name="weather_agent.run", agent="weather-bot"),))
    assert only_run(spans, config).agent_name == "weather-bot"


@pytest.mark.parametrize(
    ("rules", "problem"),
    [
        ("[{agent: weather-bot}]", "needs span_name or service_name"),
        ("[{span_name: ReAct.forward}]", "agent"),
        ("[{span_name: ReAct.forward, agent: ''}]", "agent"),
        ("[{span_name: ReAct.forward, agent: x, name: y}]", "name"),
        ("weather-bot", "agent_names"),
    ],
)
def test_bad_rules_are_refused_with_what_is_wrong(tmp_path: Path, rules: str, problem: str) -> None:
    path = write_config(tmp_path, f"collector:\n  runs:\n    agent_names: {rules}\n")
    with pytest.raises(ConfigError, match="agent_names") as caught:
        load_config(path, environ={})
    assert problem in str(caught.value)


def test_rules_load_from_the_config_file(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, "collector:\n  runs:\n    agent_names:\n      - {span_name: Agent.run, agent: haystack-bot}\n"
    )
    rules = load_config(path, environ={}).collector.runs.agent_names
    assert rules == (AgentNameRule(span_name="Agent.run", agent="haystack-bot"),)


def test_the_documented_config_loads_and_names_the_run(tmp_path: Path) -> None:
    """The YAML in docs/frameworks.md, exactly as written, is a valid config that names a DSPy run."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "frameworks.md").read_text(encoding="utf-8")
    section = doc.split("## Runs without an agent name", 1)[1]
    yaml_text = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    config = load_config(write_config(tmp_path, yaml_text), environ={})
    run = only_run(trace(), config.collector.runs)
    assert run.agent_name == "weather-bot" and selected(run, "weather-bot")
    assert only_run(trace("Agent.run", service="haystack-app"), config.collector.runs).agent_name == "haystack-bot"


def test_the_recorded_dspy_run_is_named_by_a_rule_on_its_root_span() -> None:
    """The real DSPy 3.4 recording (tests/fixtures/traces/frameworks/dspy_openinference.traces.json)."""
    folder = Path(__file__).resolve().parents[2] / "fixtures" / "traces" / "frameworks"
    spans = spans_from_request(
        parse_traces((folder / "dspy_openinference.traces.json").read_bytes(), json_body=True)
    ).items
    assert only_run(spans).agent_name is None
    config = RunsConfig(agent_names=(AgentNameRule(span_name="ReAct.forward", agent="weather-bot"),))
    assert selected(only_run(spans, config), "weather-bot")
