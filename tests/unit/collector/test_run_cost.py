"""What a run cost (#41 item 2): from the spans where frameworks record it, else its tokens priced per model with
litellm's local table; unknown stays unknown (no ``run.cost_usd`` on the score), never 0.

Recorded fixtures: LiteLLM's own spans (``gen_ai.cost.total_cost``) and BeeAI through OpenInference
(``llm.cost.total``), each with two model calls per run.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from recorded_traces import FIXTURES, load

from spanscore.run import Run, Usage
from spanscore.runs.assembly import runs_from_spans
from spanscore.sampling.decisions import Decision, Outcome
from spanscore.scorers.contracts import ScorerInfo
from spanscore.scorers.judge.litellm_call import litellm
from spanscore.scorers.results import ScoreResult, Status
from spanscore.scoring.rows import score_row
from spanscore.scoring.subject import RuleRun, Subject
from spanscore.storage.scores import RUN_COST

RECORDED = {"litellm": "gen_ai.cost.total_cost", "beeai_openinference": "llm.cost.total"}


def _attributes(run: Run) -> dict[str, str]:
    decision = Decision("r", run.run_id, run.trace_id, Outcome.SAMPLED, 1.0, "")
    book = RuleRun(decision, Subject(run, "quiet"), outstanding=1)
    row = score_row(ScorerInfo("s"), run, book, ScoreResult("s", "1", Status.OK, score=0.5), pass_threshold=0.5)
    return dict(row.attributes)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_a_run_costs_what_its_model_calls_recorded(name: str) -> None:
    spans, logs = load(name, FIXTURES / "frameworks")
    recorded: dict[str, float] = {}
    for span in spans:
        if RECORDED[name] in span.attributes:
            recorded[span.trace_id] = recorded.get(span.trace_id, 0.0) + float(span.attributes[RECORDED[name]])
    priced = [run for run in runs_from_spans(spans, logs) if run.trace_id in recorded]
    assert priced
    for run in priced:
        assert run.usage.cost_usd == pytest.approx(recorded[run.trace_id], rel=1e-12)
        assert float(_attributes(run)[RUN_COST]) == pytest.approx(recorded[run.trace_id], rel=1e-12)


def test_without_a_recorded_cost_the_tokens_are_priced_with_litellms_table() -> None:
    run = Run("hi", "hello", model="gpt-4o-mini", usage=Usage(1000, 200))
    table = litellm.model_cost["gpt-4o-mini"]
    expected = 1000 * table["input_cost_per_token"] + 200 * table["output_cost_per_token"]
    assert float(_attributes(run)[RUN_COST]) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "run",
    [
        Run("hi", "hello", model="our-own-finetune-7", usage=Usage(1000, 200)),  # no price anywhere
        Run("hi", "hello", model=None, usage=Usage(1000, 200)),  # no model to price
        Run("hi", "hello", model="gpt-4o-mini"),  # no tokens and no recorded cost
    ],
)
def test_an_unknown_cost_is_left_out_not_zero(run: Run) -> None:
    assert RUN_COST not in _attributes(run)


def test_a_partly_recorded_cost_is_not_taken_for_the_whole() -> None:
    spans, logs = load("beeai_openinference", FIXTURES / "frameworks")
    first = next(s for s in spans if "llm.cost.total" in s.attributes)
    cut = [replace(s, attributes={k: v for k, v in s.attributes.items() if k != "llm.cost.total"}) if s is first else s
           for s in spans]  # fmt: skip
    run = next(r for r in runs_from_spans(cut, logs) if r.trace_id == first.trace_id)
    assert run.usage.cost_usd is None  # then priced from the tokens, as if nothing were recorded
