"""What a run cost (#41 item 2): from the spans where frameworks record it, else its tokens priced per model with
litellm's local table; unknown stays unknown (no ``run.cost_usd`` on the score), never 0.

Recorded fixtures: LiteLLM's own spans (``gen_ai.cost.total_cost``) and BeeAI through OpenInference
(``llm.cost.total``), each with two model calls per run.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from recorded_traces import FIXTURES, load

from spanscore.records import SpanRecord
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


def _call(span_id: str, model: str, tokens: tuple[int, int], start: int) -> SpanRecord:
    return SpanRecord(
        "ab" * 16, span_id, "a" * 16, f"chat {model}", "Client", start, start + 10**8, "svc",
        {"gen_ai.operation.name": "chat", "gen_ai.request.model": model, "gen_ai.system": "openai",
         "gen_ai.usage.input_tokens": str(tokens[0]), "gen_ai.usage.output_tokens": str(tokens[1])},
    )  # fmt: skip


def _agent_with(*models: str) -> Run:
    root = SpanRecord("ab" * 16, "a" * 16, "", "invoke_agent triage", "Internal", 0, 10**9, "svc",
                      {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage"})  # fmt: skip
    calls = [_call(f"{i + 1:016x}", m, (1000 * (i + 1), 100 * (i + 1)), 10**7 * (i + 1)) for i, m in enumerate(models)]
    [run] = runs_from_spans([root, *calls], [])
    return run


def _rates(model: str) -> tuple[float, float]:
    return litellm.model_cost[model]["input_cost_per_token"], litellm.model_cost[model]["output_cost_per_token"]


def test_a_run_that_used_several_models_is_priced_call_by_call() -> None:
    """A cheap routing model and a dear answering one: pricing every token at the first model's rates was 10x off."""
    run = _agent_with("gpt-4o-mini", "gpt-4o", "gpt-4o-mini")
    (mini_in, mini_out), (big_in, big_out) = _rates("gpt-4o-mini"), _rates("gpt-4o")
    expected = (1000 + 3000) * mini_in + (100 + 300) * mini_out + 2000 * big_in + 200 * big_out
    assert run.model == "gpt-4o-mini" and (run.usage.input_tokens, run.usage.output_tokens) == (6000, 600)
    assert float(_attributes(run)[RUN_COST]) == pytest.approx(expected, rel=1e-12)


def test_a_run_with_one_unpriced_model_among_several_has_an_unknown_cost() -> None:
    assert RUN_COST not in _attributes(_agent_with("gpt-4o-mini", "our-own-finetune-7"))
    single = _agent_with("gpt-4o", "gpt-4o")  # one model: no breakdown, the run's model prices it
    assert single.usage.by_model == () and RUN_COST in _attributes(single)
