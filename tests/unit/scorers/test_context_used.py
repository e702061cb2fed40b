"""Issue #40 item 7: a context scorer's score says which context it was judged against.

The run page called a run's context "missing" next to a faithfulness score judged against the run's tool
result. The source is decided by the order the context scorers read it in, checked here against the
scorers as the registry builds them, and it travels with the score row.
"""

from __future__ import annotations

import pytest

from spanscore.run import Run, ToolCall
from spanscore.scorers import build
from spanscore.scorers.context_used import context_used
from spanscore.scorers.llm.steps import run_context

TOOL_RUN = Run(input="How much is my refund?", output="40 euros", tool_calls=[ToolCall("lookup", {}, "30 EUR")])
RETRIEVED_RUN = Run(input="q", output="a", context=["Refunds take 30 days."], tool_calls=[ToolCall("t", {}, "r")])
BARE_RUN = Run(input="q", output="a")


@pytest.mark.parametrize("name", ["faithfulness", "hallucination", "context_precision", "context_relevance"])
def test_a_context_scorer_names_the_context_it_reads(name: str) -> None:
    scorer = build(name, model="judge-x")
    assert context_used(scorer.options, TOOL_RUN) == "tool_results"
    assert run_context(TOOL_RUN, None) == ["lookup returned: 30 EUR"]  # what it read is the tool result
    assert context_used(scorer.options, RETRIEVED_RUN) == "retrieved"
    assert context_used(scorer.options, BARE_RUN) == "none"
    configured = build(name, model="judge-x", context=["Refunds: 30 days."])
    assert context_used(configured.options, TOOL_RUN) == "option"


def test_a_scorer_that_reads_no_context_names_none() -> None:
    assert context_used(build("completeness").options, TOOL_RUN) is None
