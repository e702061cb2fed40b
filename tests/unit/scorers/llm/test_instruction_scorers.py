"""prompt_alignment, noise_sensitivity, tool_call_accuracy_llm, summarization: formulas and fake-judge runs."""

from __future__ import annotations

import pytest

from spanscore.errors import ConfigError
from spanscore.run import Run
from spanscore.scorers import Status, build
from spanscore.scorers.llm.alignment import NOISE_DIMENSIONS, noise_sensitivity_score, prompt_alignment_score
from spanscore.scorers.llm.summarization import summarization_score
from spanscore.scorers.llm.tools import tool_call_accuracy_llm_score
from tests.fakes.fake_openai import Reply


def dims(intent: float, requirements: float, completeness: float, appropriateness: float) -> dict[str, object]:
    return {
        "intent_alignment": intent,
        "requirements_fulfillment": requirements,
        "completeness": completeness,
        "response_appropriateness": appropriateness,
        "requirements": [],
    }


def test_prompt_alignment_weights():
    perfect = dims(1, 1, 1, 1)
    assert prompt_alignment_score(perfect, "user") == 1.0  # TV-PA-W
    assert prompt_alignment_score(perfect, "system", scale=10) == 10.0
    assert prompt_alignment_score(dims(1, 0.5, 0.5, 0), "user") == 0.65  # TV-PA-U
    assert prompt_alignment_score(dims(1, 0.5, 0.5, 0), "system") == 0.6  # 0.35 + 0.175 + 0.075
    both = {"user": dims(1, 0.5, 0.5, 0), "system": dims(0, 0, 0, 0)}
    assert prompt_alignment_score(both, "both") == pytest.approx(0.46)  # 0.7 x 0.65


def noise(robustness: float, levels: tuple[str, ...], issues: int = 0) -> dict[str, object]:
    return {
        "dimensions": [{"dimension": NOISE_DIMENSIONS[i % 5], "impact_level": level} for i, level in enumerate(levels)],
        "major_issues": [f"issue {i}" for i in range(issues)],
        "robustness_score": robustness,
    }


def test_noise_sensitivity_formula():
    assert noise_sensitivity_score(noise(0.9, ("none",) * 5)) == 0.9  # TV-NS-1
    assert noise_sensitivity_score(noise(1.0, ("severe",) * 5)) == 0.1  # discrepancy above 0.2: take the lower
    assert noise_sensitivity_score(noise(0.7, ("moderate",) * 5)) == 0.7  # within threshold: keep the judge's
    assert noise_sensitivity_score(noise(0.9, ("none",) * 5, issues=5)) == 0.6  # penalty capped at 0.3
    assert noise_sensitivity_score(noise(1.7, ())) == 1.0  # clamped
    assert noise_sensitivity_score(noise(0.1, ("severe",), issues=3)) == 0.0
    lenient = {"impact_weights": {"minimal": 0.95}, "major_issue_per_item": 0.05, "max_major_issue_penalty": 0.15}
    assert noise_sensitivity_score(noise(0.3, ("minimal",) * 5, issues=1), **lenient) == 0.25  # type: ignore[arg-type]


def test_tool_call_accuracy_llm_formula():
    evaluations = [{"tool_called": "a", "was_appropriate": True}, {"tool_called": "b", "was_appropriate": False}]
    assert tool_call_accuracy_llm_score(evaluations) == 0.5
    assert tool_call_accuracy_llm_score(evaluations[:1]) == 1.0
    assert tool_call_accuracy_llm_score([], ["weather-tool"]) == 0.0
    assert tool_call_accuracy_llm_score([]) == 1.0


def test_summarization_formula():
    claims = [{"verdict": v} for v in ("yes", "yes", "no", "yes")]
    questions = [{"answered": a} for a in ("yes", "no")]
    assert summarization_score({"claim_verdicts": claims, "question_verdicts": questions}) == 0.5
    assert summarization_score({"claim_verdicts": claims, "question_verdicts": [{"answered": "yes"}]}) == 0.75
    assert summarization_score({"claim_verdicts": [], "question_verdicts": questions}) == 0.0


async def test_prompt_alignment_both_mode_end_to_end(judge_server, judge_options):
    judge_server.script("pa", Reply.json({"user": dims(1, 1, 1, 1), "system": dims(0, 0, 1, 0)}))
    run = Run(input="Explain how to reverse a string", output="Use s[::-1].", system="Always give code examples.")
    result = await build("prompt_alignment", **judge_options("pa")).arun(run)
    assert result.status is Status.OK
    assert result.score == pytest.approx(0.75)  # 0.7 x 1.0 + 0.3 x 0.15 = 0.745, rounded half up
    prompt = judge_server.requests[0]["messages"][1]["content"]
    assert "<<<BEGIN system_prompt>>>" in prompt and "<<<BEGIN user_prompt>>>" in prompt


async def test_prompt_alignment_modes_need_their_prompt(judge_server, judge_options):
    run = Run(input="Explain recursion", output="Recursion is...")
    result = await build("prompt_alignment", evaluation_mode="system", **judge_options("pa")).arun(run)
    assert result.status is Status.MISSING_INPUT and result.missing_fields == ("system",)
    judge_server.script("pa", Reply.json(dims(0.9, 1, 0.8, 0.5)))
    result = await build("prompt_alignment", evaluation_mode="user", scale=10, **judge_options("pa")).arun(run)
    assert result.score == pytest.approx(8.7)


async def test_dimension_scores_outside_0_1_are_rejected(judge_server, judge_options):
    judge_server.script("pa", Reply.json(dims(7, 1, 1, 1)), Reply.json(dims(7, 1, 1, 1)))
    result = await build("prompt_alignment", evaluation_mode="user", **judge_options("pa")).arun(
        Run(input="q", output="a")
    )
    assert result.status is Status.ERROR and result.score is None


async def test_noise_sensitivity_end_to_end(judge_server, judge_options):
    judge_server.script("ns", Reply.json(noise(0.65, ("minimal", "moderate", "none", "minimal", "moderate"))))
    scorer = build(
        "noise_sensitivity",
        baseline_response="To bake a cake: mix flour, sugar, eggs and butter. Bake at 350F for 30 minutes.",
        noisy_query="How do I bake a cake? Also, what's your favorite color?",
        noise_type="distractors",
        **judge_options("ns"),
    )
    run = Run(input="How do I bake a cake?", output="Mix ingredients and bake. My favorite color is blue!")
    result = await scorer.arun(run)
    assert result.score == 0.65
    assert "Noise type: distractors." in judge_server.requests[0]["messages"][1]["content"]


def test_noise_sensitivity_needs_its_test_data():
    with pytest.raises(ConfigError, match="baseline_response"):
        build("noise_sensitivity", baseline_response="", noisy_query="q")
    with pytest.raises(ConfigError, match="noisy_query"):
        build("noise_sensitivity", baseline_response="b")
    with pytest.raises(ConfigError, match="impact_weights"):
        build("noise_sensitivity", baseline_response="b", noisy_query="q", impact_weights={"awful": 0})


async def test_tool_call_accuracy_llm_end_to_end(judge_server, judge_options):
    tools = [
        {"name": "weather-tool", "description": "Current weather for a location"},
        {"id": "search-tool", "description": "Web search"},
    ]
    judge_server.script(
        "tc",
        Reply.json(
            {
                "evaluations": [{"tool_called": "search-tool", "was_appropriate": False}],
                "missing_tools": ["weather-tool"],
            }
        ),
    )
    run = Run(
        input="What is the weather in Tokyo?",
        output="It's 20C.",
        tool_calls=[{"name": "search-tool", "arguments": {"q": "tokyo weather"}}],
    )
    result = await build("tool_call_accuracy_llm", available_tools=tools, **judge_options("tc")).arun(run)
    assert result.score == 0.0
    assert result.steps["preprocess"]["actual_tools"] == ["search-tool"]
    prompt = judge_server.requests[0]["messages"][1]["content"]
    assert "- weather-tool: Current weather" in prompt and 'search-tool({"q": "tokyo weather"})' in prompt


async def test_tool_call_accuracy_llm_clarification_without_tools_scores_one(judge_server, judge_options):
    judge_server.script("tc", Reply.json({"evaluations": [], "missing_tools": []}))
    scorer = build("tool_call_accuracy_llm", available_tools=[{"name": "t", "description": "d"}], **judge_options("tc"))
    result = await scorer.arun(Run(input="I need help with something", output="Could you tell me more?"))
    assert result.score == 1.0


def test_tool_call_accuracy_llm_needs_available_tools():
    with pytest.raises(ConfigError, match="available_tools"):
        build("tool_call_accuracy_llm", available_tools=[])


async def test_summarization_end_to_end(judge_server, judge_options):
    judge_server.script(
        "sum",
        Reply.json({"claims": ["a", "b"]}),
        Reply.json({"questions": ["q1", "q2", "q3", "q4"]}),
        Reply.json({"claim_verdicts": [{"verdict": "yes"}, {"verdict": "yes"}]}),
        Reply.json({"question_verdicts": [{"answered": a} for a in ("yes", "yes", "yes", "no")]}),
    )
    run = Run(input="Summarise: a long article ...", output="A short summary.")
    result = await build("summarization", max_questions=4, **judge_options("sum")).arun(run)
    assert result.score == 0.75
    prompts = [request["messages"][1]["content"] for request in judge_server.requests]
    assert "at most 4 questions" in prompts[1]
    # Questions are written without the summary in view, and answered without the source in view.
    assert "A short summary." not in prompts[1] and "a long article" in prompts[1]
    assert "a long article" not in prompts[3] and "A short summary." in prompts[3]
