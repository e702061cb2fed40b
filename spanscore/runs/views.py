"""Span-level views of a run: one LLM call, one tool execution, one retrieval, as a ``Run`` a scorer reads.

A rule with ``target: llm``, ``tool`` or ``retrieval`` scores single spans
inside the runs it matches. Each such span is turned into a ``Run`` whose
``target`` names what it is, whose ``run_id`` and ``span_id`` are the span's
own (its scores attach to that span) and whose ``parent_run_id`` is the run
it belongs to. Built from the same merged span facts as the run itself, so a
call reads the same in every dialect:

- ``llm``: the call's input messages and system prompt, its output, the tools
  it was offered and the tool calls it requested, its model, provider and tokens;
- ``tool``: the run's question as input, the tool's result as output and the
  call itself (name, arguments, result) as the one tool call;
- ``retrieval``: the retriever's query as input (the run's question when the
  span records none), its documents as context, and the run's answer as output
  (what a context scorer asks "was it used" about).

The run's agent name, service, session and user carry over, so a rule's
``where`` matches spans by the same keys as runs; span and resource
attributes are the span's own.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from spanscore.collector.conventions.facts import SpanFacts
from spanscore.records import SpanRecord
from spanscore.run import Message, Run, Usage
from spanscore.runs.cost import recorded_cost

VIEW_KINDS = {"llm": "llm", "tool": "tool", "retriever": "retrieval"}
"""Span kind (as the conventions say it) -> the target that scores it."""


def span_views(
    run: Run,
    members: list[str],
    by_id: dict[str, SpanRecord],
    facts: dict[str, SpanFacts],
    targets: Collection[str],
) -> tuple[Run, ...]:
    """The views of ``run``'s member spans whose target is in ``targets``, in start order."""
    views = []
    for span_id in sorted(members, key=lambda m: (by_id[m].start_time_ns, m)):
        fact = facts[span_id]
        target = VIEW_KINDS.get(fact.kind or "")
        if target == "tool" and fact.tool is None:
            continue
        if target is None and fact.documents is not None:
            target = "retrieval"
        if target is None or target not in targets:
            continue
        views.append(_view(run, by_id[span_id], fact, target))
    return tuple(views)


def _view(run: Run, span: SpanRecord, fact: SpanFacts, target: str) -> Run:
    where = f" (span {span.name!r})"
    sources = {name: source + where for name, source in fact.sources.items()}
    common: dict[str, Any] = {
        "run_id": span.span_id,
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "parent_run_id": run.run_id,
        "agent_name": run.agent_name,
        "service_name": span.service_name or run.service_name,
        "session_id": fact.session_id or run.session_id,
        "user_id": fact.user_id or run.user_id,
        "error": _error(span, fact),
        "start_time_ns": span.start_time_ns,
        "end_time_ns": span.end_time_ns,
        "attributes": span.attributes,
        "resource_attributes": span.resource_attributes,
        "trace_state": span.trace_state or run.trace_state,
        "target": target,
        "model": fact.model or run.model,
        "provider": fact.provider or run.provider,
        "version_attributes": run.version_attributes,
    }
    if target == "llm":
        requested = tuple(call for message in fact.output or () for call in message.tool_calls)
        return Run(
            fact.input,
            fact.output,
            system=fact.system,
            tool_calls=requested if fact.output is not None else None,
            tools=fact.tools,
            finish_reasons=None if fact.finish_reason is None else (fact.finish_reason,),
            usage=Usage(fact.input_tokens or 0, fact.output_tokens or 0, recorded_cost(span.attributes)),
            sources=sources,
            **common,
        )
    if target == "tool":
        call = fact.tool
        assert call is not None
        sources.update(input="the run's question", tool_calls=sources.get("tool", "tool span"))
        if call.result:
            sources["output"] = "the tool's result"
        output = (Message("assistant", call.result),) if call.result else None
        return Run(run.input, output, tool_calls=(call,), sources=sources, **common)
    query = fact.input
    if query is None:
        query = run.input
        sources["input"] = "the run's question"
    sources.update(context=sources.get("documents", "retriever span"), output="the run's answer")
    return Run(query, run.output, context=fact.documents or (), sources=sources, **common)


def _error(span: SpanRecord, fact: SpanFacts) -> str | None:
    if span.status_code == "Error":
        return span.status_message or fact.error or "error"
    return fact.error
