"""What a run is: agent spans, several runs per trace, nested agents, configured names, missing fields."""

from __future__ import annotations

from dataclasses import replace

import pytest
from recorded_traces import load

from spanscore.records import SpanRecord
from spanscore.runs.assembly import assemble_runs, runs_from_spans
from spanscore.runs.config import RunsConfig

TRACE = "ab" * 16


def span(span_id: str, parent: str = "", name: str = "step", start: int = 0, **attributes: str) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind="Internal",
        start_time_ns=start,
        end_time_ns=start + 10,
        service_name="svc",
        attributes={key.replace("__", "."): value for key, value in attributes.items()},
    )


def agent(span_id: str, parent: str = "", start: int = 0, name: str = "planner", question: str = "q") -> SpanRecord:
    return span(
        span_id,
        parent,
        name=f"invoke_agent {name}",
        start=start,
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name=name,
        gen_ai__input__messages=f'[{{"role": "user", "parts": [{{"type": "text", "content": "{question}"}}]}}]',
    )


def test_two_agents_side_by_side_are_two_runs() -> None:
    spans = [span("01", name="POST /chat"), agent("02", "01", 1, "a", "first"), agent("03", "01", 20, "b", "second")]
    runs = runs_from_spans(spans)
    assert [(run.span_id, run.agent_name, run.input_text) for run in runs] == [
        ("02", "a", "first"),
        ("03", "b", "second"),
    ]


def test_nested_agents_outermost_by_default_all_when_configured() -> None:
    spans = [agent("01", name="outer"), agent("02", "01", 1, "inner"), span("03", "02", start=2)]
    assert [run.span_id for run in runs_from_spans(spans)] == ["01"]
    runs = runs_from_spans(spans, config=RunsConfig(nested_agents="all"))
    assert [run.span_id for run in runs] == ["01", "02"]


def test_inner_agent_waits_while_its_ancestors_are_missing() -> None:
    inner = [agent("02", "01", 1, "inner"), span("03", "02", start=2)]
    (outermost,) = assemble_runs(inner)
    assert outermost.run.span_id == "02" and not outermost.root_confirmed
    (every,) = assemble_runs(inner, config=RunsConfig(nested_agents="all"))
    assert every.root_confirmed
    (complete,) = assemble_runs([span("01", name="POST /chat"), *inner])
    assert complete.root_confirmed and complete.span_ids == {"02", "03"}


def test_configured_agent_span_names() -> None:
    spans = [span("01", name="http"), span("02", "01", name="my_agent", start=1), span("03", "02", start=2)]
    assert [run.span_id for run in runs_from_spans(spans)] == ["01"]
    runs = runs_from_spans(spans, config=RunsConfig(agent_span_names=("my_agent",)))
    assert [run.span_id for run in runs] == ["02"]


def test_a_trace_without_agent_span_is_one_run_at_its_root() -> None:
    spans = [span("01", name="job"), span("02", "01", start=1), span("03", "02", start=2)]
    (run,) = runs_from_spans(spans)
    assert (run.span_id, run.service_name) == ("01", "svc")


def test_missing_fields_stay_none_never_empty_strings() -> None:
    (run,) = runs_from_spans([span("01", name="job")])
    assert run.missing(["input", "output", "system", "context", "tool_calls", "ground_truth", "model"]) == [
        "input",
        "output",
        "system",
        "context",
        "tool_calls",
        "ground_truth",
        "model",
    ]
    assert run.input_text is None and run.output_text is None


@pytest.mark.parametrize("parts", ["[]", '[{"type": "text", "content": "  \\n"}]'])
def test_an_empty_answer_is_missing_so_it_is_never_scored(parts: str) -> None:
    # An empty or whitespace-only answer scored as text gives confident nonsense (completeness 1.0 on
    # nothing); it is missing, so every scorer that needs the output reports missing_input.
    messages = f'[{{"role": "assistant", "parts": {parts}}}]'
    root = span("01", gen_ai__operation__name="chat", gen_ai__output__messages=messages)
    (run,) = runs_from_spans([root])
    assert run.output is None
    assert run.missing(["output"]) == ["output"]


def test_ground_truth_from_configured_keys() -> None:
    (run,) = runs_from_spans([span("01", expected_output="Paris")])
    assert run.ground_truth == "Paris" and run.sources["ground_truth"] == "span attribute expected_output"
    config = RunsConfig(ground_truth_keys=("my.answer",))
    (run,) = runs_from_spans([span("01", my__answer="42", expected_output="Paris")], config=config)
    assert run.ground_truth == "42"


def test_root_error_status_is_the_run_error() -> None:
    failing = replace(span("01"), status_code="Error", status_message="timeout calling tool")
    (run,) = runs_from_spans([failing])
    assert run.error == "timeout calling tool"


def test_runs_of_several_traces_are_kept_apart() -> None:
    first, _ = load("openinference")
    second, _ = load("openllmetry")
    runs = runs_from_spans([*first, *second])
    assert {run.trace_id for run in runs} == {first[0].trace_id, second[0].trace_id}
    assert all(run.output_text == "It is sunny and 22 C in Paris." for run in runs)


def test_usage_is_not_counted_twice_when_the_agent_reports_a_total() -> None:
    spans, _ = load("otel_genai")
    root = next(s for s in spans if not s.parent_span_id)
    total = {"gen_ai.usage.input_tokens": "100", "gen_ai.usage.output_tokens": "20"}
    with_total = [replace(root, attributes={**root.attributes, **total}), *[s for s in spans if s is not root]]
    (run,) = runs_from_spans(with_total)
    assert (run.usage.input_tokens, run.usage.output_tokens) == (100, 20)


def test_duplicate_spans_count_once() -> None:
    spans, _ = load("openinference")
    (run,) = runs_from_spans([*spans, *spans])
    assert run.tool_calls is not None and len(run.tool_calls) == 1


def test_the_run_carries_its_root_spans_tracestate() -> None:
    spans = [
        replace(span("01", name="POST /chat"), trace_state="ot=rv:0123456789abcd"),
        replace(agent("02", "01", 1), trace_state="vendor=x,ot=rv:ffffffffffffff"),
        replace(span("03", "02", start=2), trace_state="ot=rv:00000000000000"),
    ]
    (run,) = runs_from_spans(spans)
    assert (run.span_id, run.trace_state) == ("02", "vendor=x,ot=rv:ffffffffffffff")
    (plain,) = runs_from_spans([span("01", name="job")])
    assert plain.trace_state == ""


def test_a_run_whose_root_has_not_arrived_keeps_the_traces_tracestate() -> None:
    orphans = [replace(span(f"0{i}", "ff", start=i), trace_state="ot=th:8;rv:c0ffee00c0ffee") for i in (1, 2)]
    (run,) = runs_from_spans(orphans)
    assert (run.span_id, run.trace_state) == ("ff", "ot=th:8;rv:c0ffee00c0ffee")


def test_an_answer_with_only_a_tool_request_and_blank_text_is_missing() -> None:
    # The last model call asked for a tool and said nothing: there is no answer to score.
    output = '[{"role": "assistant", "parts": [{"type": "text", "content": " "}, {"type": "tool_call", "name": "f"}]}]'
    root = span(
        "01",
        gen_ai__operation__name="chat",
        gen_ai__input__messages='[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]',
        gen_ai__output__messages=output,
    )
    (run,) = runs_from_spans([root])
    assert run.input_text == "hi"
    assert run.missing(["input", "output"]) == ["output"]
