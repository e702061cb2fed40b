"""Span-level views: one run with two LLM calls, a tool call and a retrieval gives one view per span and target."""

from __future__ import annotations

import json

from spanscore.records import SpanRecord
from spanscore.runs.assembly import assemble_runs

S = 1_000_000_000
T0 = 1_767_225_600 * S
TRACE = "0af7651916cd43dd8448eb211c80319c"


def _messages(role: str, text: str, **extra: object) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}], **extra}])


def span(span_id: str, parent: str, start: int, name: str, **attributes: str) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind="Internal",
        start_time_ns=T0 + start * S,
        end_time_ns=T0 + start * S + S // 2,
        service_name="support-bot",
        attributes=attributes,
    )


def rag_run() -> list[SpanRecord]:
    return [
        span("a" * 16, "", 0, "invoke_agent helper", **{
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper", "session.id": "conv-1",
            "gen_ai.input.messages": _messages("user", "When does the shop open?"),
            "gen_ai.output.messages": _messages("assistant", "It opens at 9."),
        }),
        span("b" * 16, "a" * 16, 1, "chat gpt-4o", **{
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": _messages("user", "When does the shop open?"),
            "gen_ai.output.messages": _messages("assistant", "Let me look it up."),
            "gen_ai.usage.input_tokens": "12", "gen_ai.usage.output_tokens": "5",
        }),
        span("c" * 16, "a" * 16, 2, "execute_tool search", **{
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
            "gen_ai.tool.call.arguments": json.dumps({"q": "opening hours"}), "gen_ai.tool.call.result": "9 to 5",
        }),
        span("d" * 16, "a" * 16, 3, "retrieval docs", **{
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.documents": json.dumps([{"content": "The shop opens at 9."}, {"content": "Parking."}]),
        }),
        span("e" * 16, "a" * 16, 4, "chat gpt-4o", **{
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": _messages("user", "Answer: the shop opens at 9."),
            "gen_ai.output.messages": _messages("assistant", "It opens at 9."),
        }),
    ]  # fmt: skip


def test_each_target_gets_one_view_per_span_with_the_runs_context() -> None:
    (assembled,) = assemble_runs(rag_run(), span_targets={"llm", "tool", "retrieval"})
    views = {(view.target, view.span_id): view for view in assembled.views}
    assert sorted(views) == [("llm", "b" * 16), ("llm", "e" * 16), ("retrieval", "d" * 16), ("tool", "c" * 16)]
    first_call = views["llm", "b" * 16]
    assert (first_call.input_text, first_call.output_text) == ("When does the shop open?", "Let me look it up.")
    assert (first_call.usage.input_tokens, first_call.usage.output_tokens, first_call.model) == (12, 5, "gpt-4o")
    tool = views["tool", "c" * 16]
    assert [(c.name, c.arguments, c.result) for c in tool.all_tool_calls] == [
        ("search", {"q": "opening hours"}, "9 to 5")
    ]
    assert (tool.input_text, tool.output_text) == ("When does the shop open?", "9 to 5")
    retrieval = views["retrieval", "d" * 16]
    assert retrieval.context == ("The shop opens at 9.", "Parking.")
    assert (retrieval.input_text, retrieval.output_text) == ("When does the shop open?", "It opens at 9.")
    for view in assembled.views:
        # ids of their own (scores attach to the span), the run they belong to, and the run's keys for filters
        assert view.run_id == view.span_id and view.parent_run_id == "a" * 16
        assert (view.agent_name, view.service_name, view.session_id) == ("helper", "support-bot", "conv-1")


def test_views_are_built_only_for_the_targets_asked_for() -> None:
    (plain,) = assemble_runs(rag_run())
    assert plain.views == ()
    (only_tools,) = assemble_runs(rag_run(), span_targets={"tool"})
    assert [view.target for view in only_tools.views] == ["tool"]
