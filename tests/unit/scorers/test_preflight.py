"""LLM scorers need a judge the user named and its key; unknown scorer ids fail fast, without litellm."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spanscore.config import ServiceConfig
from spanscore.errors import ConfigError
from spanscore.sampling.rules import RuleConfig
from spanscore.scorers import registry
from spanscore.scorers.preflight import (
    BUILTIN_TARGETS,
    CODE_SCORERS,
    LLM_SCORERS,
    ScorerUse,
    check_scorers,
    rule_scorer_uses,
)
from spanscore.server.service import Service
from tests.conftest import write_config

ROOT = Path(__file__).resolve().parents[3]


def test_static_scorer_lists_match_the_registry() -> None:
    assert sorted(CODE_SCORERS | LLM_SCORERS) == registry.available()
    assert not CODE_SCORERS & LLM_SCORERS


def test_llm_scorer_without_judge_section_names_the_missing_model() -> None:
    with pytest.raises(ConfigError) as caught:
        check_scorers([ScorerUse("rules[0].scorers[1]", "faithfulness")], {}, {})
    message = str(caught.value)
    assert "rules[0].scorers[1] (faithfulness)" in message
    assert "no judge model is configured" in message
    assert "judge: {model:" in message


def test_unset_api_key_variable_is_named() -> None:
    judge = {"model": "openai/gpt-4o-mini", "api_key_env": "MY_JUDGE_KEY"}
    with pytest.raises(ConfigError, match="MY_JUDGE_KEY.*is not set"):
        check_scorers([ScorerUse("rules[0].scorers[0]", "toxicity")], judge, {})
    check_scorers([ScorerUse("rules[0].scorers[0]", "toxicity")], judge, {"MY_JUDGE_KEY": "k"})


def test_provider_key_litellm_would_read_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    use = ScorerUse("--scorer bias", "bias", {"model": "anthropic/claude-3-5-haiku-latest"})
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        check_scorers([use], {}, {})


def test_local_judge_server_and_code_scorers_pass() -> None:
    check_scorers(
        [ScorerUse("x", "bias", {"judge": {"model": "openai/m", "api_base": "http://127.0.0.1:1/v1"}})], {}, {}
    )
    uses = [ScorerUse("x", name, target=BUILTIN_TARGETS.get(name, ("run",))[0]) for name in sorted(CODE_SCORERS)]
    check_scorers(uses, {}, {})


def test_service_refuses_llm_rule_without_judge(service_config: ServiceConfig) -> None:
    service_config.rules = [RuleConfig.model_validate({"name": "r", "scorers": ["faithfulness"]})]
    with pytest.raises(ConfigError, match="no judge model is configured"):
        Service(service_config)


def test_score_command_refuses_llm_scorer_without_judge_model(tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_text('{"input": "q", "output": "a"}\n', encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "spanscore.cli.commands", "score", "--scorer", "answer_relevancy", str(runs)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    assert "no judge model is configured" in result.stderr
    assert result.stdout == ""


def test_unknown_scorer_is_reported_without_importing_litellm(tmp_path: Path) -> None:
    config = write_config(tmp_path, "rules: [{name: r, scorers: [faithfullness]}]\n")
    probe = (
        "import sys\n"
        "from spanscore.config import load_config\n"
        "from spanscore.scorers.preflight import check_scorers, rule_scorer_uses\n"
        "from spanscore.errors import ConfigError\n"
        f"config = load_config({str(config)!r}, environ={{}})\n"
        "try:\n"
        "    check_scorers(rule_scorer_uses(config.rules), config.judge, {})\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
        "print('litellm loaded' if 'litellm' in sys.modules else 'litellm not loaded')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(ROOT)}
    )
    assert "unknown scorer 'faithfullness'" in result.stdout
    assert "litellm not loaded" in result.stdout


# Options that let every built-in build without a config file: a judge model for the LLM ones, the required
# option of the few that have one.
_BUILD_OPTIONS = {
    "tool_call_accuracy": {"expected_tool": "search"},
    "tool_call_accuracy_llm": {"available_tools": [{"name": "search"}]},
    "noise_sensitivity": {"baseline_response": "a", "noisy_query": "q"},
    "llm_judge": {"id": "x", "instructions": "judge", "analyze": {"prompt": "{output}", "schema": {}}, "score": "1"},
}


@pytest.mark.parametrize("name", sorted(CODE_SCORERS | LLM_SCORERS - {"llm_judge"}))
def test_static_targets_match_what_each_built_in_declares(name: str) -> None:
    options = dict(_BUILD_OPTIONS.get(name, {}))
    if name in LLM_SCORERS:
        options["model"] = "openai/gpt-4o-mini"
    declared = registry.build(name, **options).info.targets
    assert declared == BUILTIN_TARGETS.get(name, ("run", "llm"))


def test_a_rule_pairing_a_scorer_with_a_target_it_cannot_score_is_refused_naming_both() -> None:
    rules = [
        RuleConfig.model_validate({"name": "convo", "target": "session", "scorers": ["turn_count", "completeness"]}),
        RuleConfig.model_validate({"name": "calls", "target": "llm", "scorers": ["turn_count"]}),
        RuleConfig.model_validate({"name": "docs", "target": "retrieval", "scorers": ["tool_call_accuracy_llm"]}),
    ]
    with pytest.raises(ConfigError) as caught:
        check_scorers(rule_scorer_uses(rules), {"model": "openai/x", "api_base": "http://127.0.0.1:9"}, {})
    message = str(caught.value)
    assert "3 problem(s)" in message
    assert "rules[0].scorers[1]: rule 'convo' has target 'session', which scorer 'completeness' cannot score" in message
    assert "rules[1].scorers[0]: rule 'calls' has target 'llm', which scorer 'turn_count' cannot score" in message
    assert "(it scores: session)" in message
    assert "rules[2].scorers[0]" in message and "(it scores: run, llm, tool)" in message


def test_building_the_rules_refuses_a_wrong_target_too() -> None:
    """The same check at build time covers scorers from module paths, which declare their own targets."""
    from spanscore.scoring.live import build_rule_scorers

    rule = RuleConfig.model_validate({"name": "convo", "target": "session", "scorers": ["keyword_coverage"]})
    with pytest.raises(ConfigError, match=r"rule 'convo' has target 'session', which scorer 'keyword_coverage'"):
        build_rule_scorers([rule])
