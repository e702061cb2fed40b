"""Every LLM scorer of the catalogue is registered under its id, marked as a judge, and oriented."""

from __future__ import annotations

import pytest

from spanscore.scorers import available, build
from spanscore.scorers.judge.client import JudgeConfig
from spanscore.scorers.judge.current import Judge, using_judge

LOWER_IS_BETTER = {"bias", "hallucination", "toxicity"}
NEEDS_OPTIONS = {
    "noise_sensitivity": {"baseline_response": "b", "noisy_query": "q"},
    "tool_call_accuracy_llm": {"available_tools": [{"name": "t", "description": "d"}]},
}
CATALOGUE = [
    "answer_relevancy",
    "answer_similarity",
    "bias",
    "context_precision",
    "context_relevance",
    "context_recall",
    "faithfulness",
    "hallucination",
    "noise_sensitivity",
    "prompt_alignment",
    "summarization",
    "tool_call_accuracy_llm",
    "toxicity",
]


@pytest.mark.parametrize("scorer_id", CATALOGUE)
def test_registered_with_metadata(scorer_id: str):
    assert scorer_id in available()
    scorer = build(scorer_id, model="openai/some-judge", **NEEDS_OPTIONS.get(scorer_id, {}))
    assert scorer.id == scorer_id
    assert scorer.info.kind == "llm"
    assert scorer.is_async
    assert scorer.info.higher_is_better is (scorer_id not in LOWER_IS_BETTER)
    assert scorer.options["model"] == "openai/some-judge"


def test_scorers_start_from_the_judge_they_are_built_with():
    judge = Judge(JudgeConfig(model="anthropic/claude-judge", timeout_s=7))
    with using_judge(judge):
        built = build("faithfulness")
        assert built.options["model"] == "anthropic/claude-judge"
        assert build("faithfulness", judge={"model": "ollama/llama3"}).options["model"] == "ollama/llama3"
    # Built outside, a scorer has the default judge; the one built inside keeps its judge's client.
    assert build("faithfulness").options["model"] != "anthropic/claude-judge"
    clients = {id(step.settings.client) for step in built._steps if hasattr(step, "settings")}
    assert clients == {id(judge.client)}


def test_a_bad_judge_override_is_a_config_error():
    from spanscore.errors import ConfigError

    with pytest.raises(ConfigError, match="api_key"):
        build("bias", judge={"api_key": "sk-inline"})
    with pytest.raises(ConfigError, match="step_judges"):
        build("bias", step_judges={"score": {"model": "openai/x"}})
