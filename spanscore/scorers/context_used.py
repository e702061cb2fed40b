"""Which context a scorer judged a run against, so the run page can name it rather than guess.

The context scorers (faithfulness, hallucination, context_precision, context_relevance, context_recall)
read, in this order, their ``context`` option, else the run's retrieved documents, else its tool results
(``spanscore.scorers.llm.steps.run_context``). A run judged against its tool results has no retrieved
context, and a page that only looked at the run would call its context "missing". The answer is stored
with the score (``Attributes['context.source']``). This module imports no judge code: the dispatcher
asks it for every score.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from spanscore.run import Run

ContextSource = Literal["option", "retrieved", "tool_results", "none"]
ATTRIBUTE = "context.source"


def context_source(run: Run, configured: object) -> ContextSource:
    """Where the context of ``run`` comes from, in ``run_context``'s order; ``none`` when there is none."""
    if configured:
        return "option"
    if run.context is not None:
        return "retrieved"
    if any(call.result is not None for call in run.all_tool_calls):
        return "tool_results"
    return "none"


def context_used(options: Mapping[str, Any], run: Run) -> ContextSource | None:
    """The context a scorer with these options reads for ``run``; None for a scorer that reads no context."""
    if "context" not in options:
        return None
    return context_source(run, options["context"])
