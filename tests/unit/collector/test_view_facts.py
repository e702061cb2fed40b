"""Filter views read from model calls without their messages are the views read from full facts (#43).

``view_facts`` leaves out a model call's messages; a run no rule selects is handed on as its filter view,
and a run some rule selects is built from full facts. Held three ways: every field a view reads is the
same on arbitrary spans, sources included; the views and the built runs of arbitrary traces and of every
recorded fixture equal those made from full facts; and a rule's decisions over the recorded fixtures do
not change (``bench.decision_rows``, tests/unit/runs/test_decision_rows_golden.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recorded_traces import RECORDED, load
from test_conventions_precheck import background, outside
from test_conventions_properties import logs, spans

from spanscore.collector.conventions import NO_FACTS, precedence, span_facts, view_facts
from spanscore.collector.conventions.facts import SpanFacts
from spanscore.records import LogRecord, SpanRecord
from spanscore.run import Run
from spanscore.runs import assembly
from spanscore.runs.assembly import SelectedShare, assemble_runs
from spanscore.runs.config import RunsConfig
from spanscore.runs.readiness import RunAssembler

WHO = ("kind", "agent_name", "agent_label", "model", "provider", "session_id", "user_id", "error")
"""What a filter view reads of a span's facts (``RunFields.filter_view``, ``runs.assembly``)."""

CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "openai/gpt-4o-mini",
    "gen_ai.provider.name": "openai",
    "gen_ai.conversation.id": "s-1",
    "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "What is the refund policy?"}]}]',
    "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "text", "content": "30 days."}]}]',
}


def _who(facts: SpanFacts) -> tuple[Any, ...]:
    return tuple(getattr(facts, name) for name in WHO), {k: v for k, v in facts.sources.items() if k in WHO}


def _check(span: SpanRecord, records: Sequence[LogRecord]) -> None:
    full = span_facts(span, records)
    read = view_facts(span, records)
    if read is not NO_FACTS:  # partial: only what a view reads
        assert _who(read) == _who(full)
    else:
        assert read == full


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans(), st.lists(logs, max_size=3))
def test_a_view_reads_what_the_full_facts_say(span: SpanRecord, records: list[LogRecord]) -> None:
    _check(span, [log for log in records if log.span_id == span.span_id])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outside(()), st.sampled_from(["chat", "text_completion", "invoke_agent", "execute_tool", ""]))
def test_a_view_of_vocabulary_spans_reads_what_the_full_facts_say(attributes: dict[str, str], operation: str) -> None:
    if operation:
        attributes = {**attributes, "gen_ai.operation.name": operation}
    _check(replace(background("01"), attributes=attributes), [])


def test_a_chat_span_is_read_without_its_messages_and_a_tool_span_without_its_call() -> None:
    chat = replace(background("02", parent="01"), attributes=dict(CHAT))
    read = view_facts(chat)
    assert read is not NO_FACTS and read.input is None and read.output is None and span_facts(chat).input is not None
    assert (read.model, read.provider, read.session_id) == ("gpt-4o-mini", "openai", "s-1")
    assert read.sources["model"] == span_facts(chat).sources["model"]
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.arguments": "{}"}
    read = view_facts(replace(background("03", parent="01"), attributes=tool))
    assert read is not NO_FACTS and read.kind == "tool" and read.tool is None
    assert view_facts(background("04")) is NO_FACTS is span_facts(background("04"))


@contextmanager
def full_facts_only() -> Iterator[None]:
    with mock.patch.object(assembly, "view_facts", span_facts):
        yield


def _assembled(trace: list[SpanRecord], records: list[LogRecord], config: RunsConfig, select: bool) -> list[Any]:
    def selects(run: Run) -> bool:
        return select

    return [
        (item.run, item.view, item.root_confirmed, item.span_ids)
        for item in assemble_runs(trace, records, config, (), selects)
    ]


def _same_either_way(trace: list[SpanRecord], records: list[LogRecord]) -> None:
    configs = (RunsConfig(), RunsConfig(nested_agents="all", agent_span_names=("step-02", "chat gpt")))
    for config in configs:
        for select in (False, True):
            read = _assembled(trace, records, config, select)
            with full_facts_only():
                assert read == _assembled(trace, records, config, select)
        built = [(item.run, item.root_confirmed) for item in assemble_runs(trace, records, config)]
        assert [(run, confirmed) for run, _, confirmed, _ in _assembled(trace, records, config, True)] == built


def _chat_span(span_id: str, parent: str) -> SpanRecord:
    return replace(background(span_id, parent=parent, trace_id="1" * 32), name="chat gpt", attributes=dict(CHAT))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        spans()
        | st.builds(lambda attributes: replace(background("02", "01"), attributes=attributes), outside(()))
        | st.sampled_from([_chat_span("03", "01"), _chat_span("04", "02"), _chat_span("01", "")]),
        max_size=6,
    ),
    st.lists(logs, max_size=3),
)
def test_views_and_runs_of_arbitrary_traces_are_those_of_full_facts(
    trace: list[SpanRecord], records: list[LogRecord]
) -> None:
    _same_either_way([replace(span, trace_id="1" * 32) for span in trace], records)


@pytest.mark.parametrize("name", RECORDED)
def test_views_and_runs_of_recorded_fixtures_are_those_of_full_facts(name: str) -> None:
    fixture_spans, fixture_logs = load(name)
    _same_either_way(fixture_spans, fixture_logs)


def test_an_unnamed_agent_holding_the_prompt_is_the_run_and_one_without_it_a_wrapper() -> None:
    """The one case where a view needs more than who-fields: whether an unnamed agent span holds the prompt."""
    agent = {"gen_ai.operation.name": "invoke_agent"}
    named = replace(background("02", parent="01"), attributes={**agent, "gen_ai.agent.name": "inner"})
    for outer, root in ((dict(agent), "02"), ({**agent, "gen_ai.input.messages": CHAT["gen_ai.input.messages"]}, "01")):
        trace = [replace(background("01"), attributes=outer), named]
        for select in (False, True):
            (run,) = [item[0] for item in _assembled(trace, [], RunsConfig(), select)]
            assert run.span_id == root
        _same_either_way(trace, [])


def _chat_traces(count: int, offset: int = 0) -> list[SpanRecord]:
    out = []
    for n in range(offset, offset + count):
        trace = f"{n:032x}"
        root = replace(background("01", trace_id=trace), attributes={"gen_ai.operation.name": "invoke_agent"})
        out += [root, replace(_chat_span("02", "01"), trace_id=trace)]
    return out


@pytest.mark.parametrize("selected", [True, False])
def test_views_are_read_first_only_while_most_runs_stay_views(selected: bool) -> None:
    """A rule every run's ``where`` matches would have each GenAI span read twice: for its view, then in full."""
    reads: list[bool] = []

    def counted(span: SpanRecord, records: Sequence[LogRecord] = ()) -> SpanFacts:
        reads.append(True)
        return view_facts(span, records)

    assembler = RunAssembler(RunsConfig(quiet_period_s=1))
    assembler.selects = lambda run: selected
    expected = []
    with mock.patch.object(assembly, "view_facts", counted):
        for batch in range(4):
            spans = _chat_traces(10, offset=batch * 10)
            assembler.add_spans(spans, now_ns=batch * 10 * 10**9)
            ready = assembler.poll_ready(now_ns=(batch * 10 + 2) * 10**9)
            assert len(ready) == 10 and all(item.complete is None for item in ready) == selected
            expected += [item.run for item in ready]
    # Selected: only the first trace's two spans are read for views first (no run counted yet), then none.
    assert len(reads) == (2 if selected else 80)
    assert (assembler.selected_share.built, assembler.selected_share.viewed) == ((40, 0) if selected else (0, 40))
    with full_facts_only():
        again = RunAssembler(RunsConfig(quiet_period_s=1))
        again.selects = lambda run: selected
        again.add_spans(_chat_traces(40), now_ns=0)
        assert sorted(item.run.run_id for item in again.poll_ready(now_ns=2 * 10**9)) == sorted(
            run.run_id for run in expected
        )


def test_the_selected_share_follows_the_recent_runs() -> None:
    share = SelectedShare()
    assert share.views_first()
    share.count([mock.Mock(view=False)] * 3 + [mock.Mock(view=True)] * 2)
    assert not share.views_first()
    share.count([mock.Mock(view=True)] * (SelectedShare.WINDOW))
    assert share.views_first() and share.built + share.viewed <= SelectedShare.WINDOW


def test_long_key_sets_are_checked_each_time_not_remembered() -> None:
    precedence._READERS.clear()
    long_keys = {"gen_ai.operation.name": "chat", **{f"llm.input_messages.{n}.message.content": "x" for n in range(80)}}
    assert [d.name for d in precedence.dialects_reading(long_keys)] == ["openinference", "openllmetry"]
    assert precedence._READERS == {}
    short = {"gen_ai.operation.name": "chat"}
    assert [d.name for d in precedence.dialects_reading(short)] == []  # only the GenAI conventions read it
    assert list(precedence._READERS) == [("gen_ai.operation.name",)]
