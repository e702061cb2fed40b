from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from spanscore.errors import ConfigError
from spanscore.run import Run
from spanscore.sampling.rules import SamplingConfig, load_sampling_config

ISSUE_EXAMPLE = """
rules:
  - name: support-quality
    where: {service.name: support-bot, gen_ai.agent.name: [triage, answer]}
    sample: 0.1
    scorers: [faithfulness, answer_relevancy]
    max_per_minute: 60
  - name: cheap-checks
    sample: 1.0
    scorers: [keyword_coverage, {name: tool_call_accuracy, expected_tool: search}]
"""


def _problems(raw: Any, **kwargs: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_sampling_config(raw, **kwargs)
    return str(caught.value).splitlines()


def _rule(**fields: Any) -> dict[str, Any]:
    return {"name": "r", "scorers": ["faithfulness"], **fields}


def test_the_issue_example_loads() -> None:
    config = load_sampling_config(yaml.safe_load(ISSUE_EXAMPLE))
    quality, cheap = config.rules
    assert (quality.name, quality.sample, quality.max_per_minute) == ("support-quality", 0.1, 60)
    assert [scorer.name for scorer in quality.scorers] == ["faithfulness", "answer_relevancy"]
    assert cheap.scorers[1].name == "tool_call_accuracy"
    assert cheap.scorers[1].options == {"expected_tool": "search"}
    assert quality.where.matches(Run(service_name="support-bot", attributes={"gen_ai.agent.name": "answer"}))
    assert not quality.where.matches(Run(service_name="support-bot", attributes={"gen_ai.agent.name": "plan"}))
    assert cheap.where.matches(Run())


def test_defaults_are_filled_in() -> None:
    rule = load_sampling_config({"rules": [_rule()]}).rules[0]
    assert rule.sample == 1.0
    assert rule.max_per_minute is None and rule.budget is None and rule.salt is None
    assert rule.always.errors is False and rule.always.where is None
    assert load_sampling_config(None) == SamplingConfig()


def test_always_and_budget_load() -> None:
    raw = _rule(always={"errors": True, "where": {"duration_ms": {"gt": 30_000}}}, budget={"daily_tokens": 500_000})
    rule = load_sampling_config({"rules": [raw]}).rules[0]
    assert rule.always.errors
    assert rule.always.where is not None and rule.always.where.matches(Run(start_time_ns=0, end_time_ns=31 * 10**9))
    assert rule.budget is not None and rule.budget.limit == 500_000


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ([_rule(), _rule(), _rule(name="ok", sample=1.5)], "config: rules[2].sample must be between 0 and 1, got 1.5"),
        ([_rule(sample=-0.1)], "config: rules[0].sample must be between 0 and 1, got -0.1"),
        ([_rule(where={"latency": {"gtt": 5}})], "config: rules[0].where.latency: unknown operator 'gtt'"),
        ([_rule(always={"where": {"a": {"regex": "("}}})], "config: rules[0].always.where.a.regex: invalid regular"),
        ([_rule(smaple=0.1)], "config: rules[0].smaple: unknown key (check the spelling)"),
        ([{"name": "r"}], "config: rules[0].scorers: required key is missing"),
        ([_rule(scorers=[])], "config: rules[0].scorers: List should have at least 1 item"),
        ([_rule(scorers=[{"expected_tool": "x"}])], "config: rules[0].scorers[0].name: required key is missing"),
        ([_rule(budget={})], "config: rules[0].budget: set exactly one of daily_usd or daily_tokens"),
        ([_rule(budget={"daily_usd": 1, "daily_tokens": 2})], "config: rules[0].budget: set exactly one"),
        ([_rule(max_per_minute=0)], "config: rules[0].max_per_minute: Input should be greater than 0"),
        ([_rule(), _rule()], "config: rules: rule name 'r' is used by rules[0] and rules[1]; names must be unique"),
    ],
)
def test_problems_name_their_path(rules: list[dict[str, Any]], expected: str) -> None:
    assert any(line.startswith(expected) for line in _problems({"rules": rules})), _problems({"rules": rules})


def test_every_problem_is_reported_together_including_duplicate_names() -> None:
    rules = [_rule(sample=2), _rule(where={"x": {"gtt": 1}}), _rule(name="b", bogus=1)]
    lines = _problems({"rules": rules}, source="spanscore.yaml")
    assert lines == [
        "spanscore.yaml: rules[0].sample must be between 0 and 1, got 2.0",
        "spanscore.yaml: rules[1].where.x: unknown operator 'gtt' (expected one of: "
        "eq, ne, in, regex, contains, gt, gte, lt, lte, exists, not)",
        "spanscore.yaml: rules[2].bogus: unknown key (check the spelling)",
        "spanscore.yaml: rules: rule name 'r' is used by rules[0] and rules[1]; names must be unique",
    ]


def test_prefix_places_the_section_in_a_larger_file() -> None:
    lines = _problems({"rules": [_rule(sample=3)]}, prefix="sampling.")
    assert lines == ["config: sampling.rules[0].sample must be between 0 and 1, got 3.0"]


def _yaml_blocks_of_the_docs() -> list[str]:
    text = (Path(__file__).parents[3] / "docs" / "sampling.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    return [part for block in blocks for part in block.split("\n\n") if part.strip()]


def test_the_yaml_in_the_docs_loads() -> None:
    blocks = _yaml_blocks_of_the_docs()
    assert len(blocks) >= 4
    for block in blocks:
        raw = yaml.safe_load(block)
        if "rules" in raw:
            load_sampling_config(raw)
        else:
            load_sampling_config({"rules": [{"name": "docs", "scorers": ["x"], **raw}]})
