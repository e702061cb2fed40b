"""Agreement with @mastra/evals 1.10.2 on the golden corpus (tests/fixtures/golden)."""

from pathlib import Path

import pytest

from tests.golden import GoldenCase, load_cases, measure

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
HELD_OUT = GOLDEN / "held_out"  # a second sentence pool (later also used to refine the completeness rules)
FRESH = GOLDEN / "fresh"  # a third pool written after the rules were final: never used to change them

# Targets from the issue: 99% within 0.01 for every code scorer except completeness (90%), whose
# reference uses a rule-based English tagger that spanscore approximates.
TARGETS = {
    "content_similarity": 0.99,
    "textual_difference": 0.99,
    "keyword_coverage": 0.99,
    "tone_consistency": 0.99,
    "tool_call_accuracy": 0.99,
    "completeness": 0.90,
}


@pytest.fixture(scope="module", params=[GOLDEN, HELD_OUT, FRESH], ids=["main", "held_out", "fresh"])
def cases(request: pytest.FixtureRequest) -> list[GoldenCase]:
    directory: Path = request.param
    return load_cases(directory)


def test_corpus_is_varied_enough(cases: list[GoldenCase]) -> None:
    by_scorer = {name: sum(1 for c in cases if c.scorer_name == name) for name in TARGETS}
    assert all(count >= 200 for count in by_scorer.values()), by_scorer


@pytest.mark.parametrize("scorer_name", sorted(TARGETS))
def test_agreement_meets_target(cases: list[GoldenCase], scorer_name: str) -> None:
    agreement = measure([c for c in cases if c.scorer_name == scorer_name])[scorer_name]
    assert agreement.rate >= TARGETS[scorer_name], (
        f"{scorer_name}: {agreement.agreed}/{agreement.total} agree; "
        f"first disagreeing cases {agreement.disagreements[:10]}"
    )
