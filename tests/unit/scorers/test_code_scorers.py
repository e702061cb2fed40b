"""Seed test vectors (scorers-spec.md §5, Appendix S.9) and behaviour the golden corpus does not pin."""

import pytest

from spanscore import Run
from spanscore.errors import ConfigError
from spanscore.scorers import Status, available, build
from spanscore.scorers.code.completeness import coverage, extract_elements
from spanscore.scorers.code.content_similarity import dice_similarity
from spanscore.scorers.code.keyword_coverage import extract_keywords
from spanscore.scorers.code.sentiment import analyze_sentiment
from spanscore.scorers.code.textual_difference import analyze_difference, count_changes

BUILT_INS = {
    "completeness",
    "content_similarity",
    "keyword_coverage",
    "textual_difference",
    "tone_consistency",
    "tool_call_accuracy",
}


def test_all_built_ins_are_registered() -> None:
    assert BUILT_INS <= set(available())


def _tools(*names: str) -> Run:
    return Run(input="What's the weather?", output="Done.", tool_calls=list(names))


@pytest.mark.parametrize(
    ("options", "calls", "expected"),
    [
        ({"expected_tool": "weather-tool"}, ["weather-tool"], 1.0),
        ({"expected_tool": "weather-tool", "strict_mode": True}, ["search-tool", "weather-tool"], 0.0),
        (
            {"expected_tool": "auth-tool", "expected_tool_order": ["auth-tool", "fetch-tool"], "strict_mode": True},
            ["auth-tool", "fetch-tool"],
            1.0,
        ),
        (
            {"expected_tool": "auth-tool", "expected_tool_order": ["auth-tool", "fetch-tool"], "strict_mode": False},
            ["auth-tool", "log-tool", "fetch-tool"],
            1.0,
        ),
        ({"expected_tool": "weather-tool", "strict_mode": False}, ["search-tool"], 0.0),
        ({"expected_tool_order": ["b", "a"]}, ["a", "b", "a"], 0.0),  # first occurrences decide
        ({"expected_tool": "x"}, [], 0.0),
    ],
)
def test_tool_call_accuracy_seed_vectors(options: dict[str, object], calls: list[str], expected: float) -> None:
    result = build("tool_call_accuracy", **options).run(_tools(*calls))
    assert result.status is Status.OK and result.score == expected


def test_tool_call_accuracy_reads_calls_from_output_messages() -> None:
    run = Run(input="q", output=[{"role": "assistant", "content": "", "tool_calls": [{"name": "weather-tool"}]}])
    assert build("tool_call_accuracy", expected_tool="weather-tool").run(run).score == 1.0


def test_tool_call_accuracy_needs_an_expectation_and_messages() -> None:
    with pytest.raises(ConfigError, match="expected_tool"):
        build("tool_call_accuracy")
    with pytest.raises(ConfigError, match="strict_mode"):
        build("tool_call_accuracy", expected_tool="x", strict_mode="yes")
    result = build("tool_call_accuracy", expected_tool="x").run(Run(input=[], output="a", tool_calls=["x"]))
    assert result.status is Status.MISSING_INPUT


@pytest.mark.parametrize(
    ("inp", "out", "expected"),
    [("", "", 1.0), ("", "hello world programming", 1.0), ("hello world programming", "", 0.0)],
)
def test_keyword_coverage_empty_sides_follow_the_reference(inp: str, out: str, expected: float) -> None:
    assert build("keyword_coverage").run(Run(input=inp, output=out)).score == expected


def test_keywords_drop_stop_words_digits_and_punctuation() -> None:
    assert extract_keywords("The JavaScript, and (React) 2024 frameworks! javascript") == [
        "javascript",
        "react",
        "frameworks",
    ]
    assert extract_keywords("see https://example.test/a.b now") == ["https://example.test/a.b"]


def test_textual_difference_reference_check() -> None:
    step = analyze_difference("The capital of France is Paris.", "Paris is the capital of France.")
    assert step["ratio"] == pytest.approx(0.6774193548387096, abs=1e-12)
    assert (step["confidence"], step["changes"], step["length_diff"]) == (1.0, 3, 0.0)
    assert count_changes("a  b", "a b") == 1
    assert analyze_difference("", "")["ratio"] == 1.0


def test_content_similarity_defaults_and_options() -> None:
    run = Run(input="Hello World", output="hello   world")
    assert build("content_similarity").run(run).score == 1.0
    assert build("content_similarity", ignore_case=False).run(run).score < 1.0
    assert dice_similarity("a", "b") == 0.0
    assert dice_similarity("night", "nacht") == pytest.approx(0.25)


def test_content_similarity_counts_utf16_units_like_javascript() -> None:
    # One emoji is two UTF-16 units, so "😀" alone has one bigram (its surrogate pair).
    assert dice_similarity("😀", "😀x") == pytest.approx(2 * 1 / (2 + 3 - 2))


def test_sentiment_negation_and_comparative() -> None:
    good, not_good = analyze_sentiment("good"), analyze_sentiment("not good")
    assert good.score > 0 and not_good.score == -good.score
    assert not_good.comparative == pytest.approx(not_good.score / 2)
    assert analyze_sentiment("").comparative == 0.0
    assert analyze_sentiment("love it 😀").score > analyze_sentiment("love it").score


def test_tone_modes() -> None:
    steady = build("tone_consistency").run(Run(output="I love it. I love it."))
    assert steady.score == 1.0 and steady.steps["preprocess"]["sentiment_variance"] == 0.0
    swing = build("tone_consistency").run(Run(output="I love this wonderful thing! I hate this awful mess."))
    assert swing.score is not None and swing.score < 1.0
    compared = build("tone_consistency", reference_tone="great").run(Run(output="great"))
    assert compared.score == 1.0 and compared.steps["preprocess"]["difference"] == 0.0
    assert build("tone_consistency").run(Run(input="only input")).status is Status.MISSING_INPUT


def test_completeness_elements_and_coverage() -> None:
    assert extract_elements("He went to the store and was running late.") == [
        "he",
        "go",
        "to",
        "the",
        "store",
        "and",
        "run",
        "late",
    ]
    assert extract_elements("Café RÉSUMÉ") == ["cafe", "resume"]
    assert coverage([], []) == 1.0 and coverage([], ["x"]) == 0.0
    assert coverage(["process"], ["processes"]) == 1.0  # substring longer than 60%
    assert coverage(["cat"], ["cats"]) == 0.0  # short elements need an exact match


def test_completeness_missing_output_is_missing_input() -> None:
    result = build("completeness").run(Run(input="Explain photosynthesis"))
    assert result.status is Status.MISSING_INPUT and result.score is None


@pytest.mark.parametrize("name", ["content_similarity", "textual_difference"])
def test_compare_with_ground_truth(name: str) -> None:
    scorer = build(name, compare_with="ground_truth")
    run = Run(input="something else entirely", output="Paris is the capital", ground_truth="Paris is the capital")
    assert scorer.run(run).score == 1.0
    assert build(name).run(run).score < 1.0  # the default compares with the input, as the reference does
    missing = scorer.run(Run(input="q", output="a"))
    assert missing.status is Status.MISSING_INPUT and missing.missing_fields == ("ground_truth",)
    with pytest.raises(ConfigError, match="compare_with"):
        build(name, compare_with="context")
