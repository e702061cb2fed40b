"""OpenInference TOOL spans without ``tool.name`` are named from the span name (#29).

DSPy's instrumentation (openinference-instrumentation-dspy 0.1.48) names a ReAct tool's span after
the call (``get_weather.__call__``), sets no ``tool.name`` and records the arguments as the call's
``{"kwargs": {...}}``; spanscore recorded no tool call and ``tool_call_accuracy`` scored 0. Other
instrumentations name a tool span ``Owner.tool`` or ``execute_tool tool``; a span named after a
generic tool class (``FunctionTool.acall``, ``SimpleTool``) says nothing about which tool ran.
"""

from __future__ import annotations

import json

import pytest
from recorded_traces import FIXTURES, load

from spanscore.collector.conventions import span_facts
from spanscore.records import SpanRecord
from spanscore.run import ToolCall
from spanscore.runs.assembly import runs_from_spans
from spanscore.scorers import build

RESULT = json.dumps({"temp_c": 22, "sky": "sunny"})
KWARGS = json.dumps({"kwargs": {"city": "Paris"}})


def tool_span(name: str, attributes: dict[str, str], span_id: str = "2" * 16, parent: str = "1" * 16) -> SpanRecord:
    return SpanRecord(
        trace_id="d" * 32,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind="Internal",
        start_time_ns=2,
        end_time_ns=3,
        attributes={"openinference.span.kind": "TOOL", **attributes},
    )


@pytest.mark.parametrize(
    ("span_name", "tool"),
    [
        ("get_weather.__call__", "get_weather"),
        ("get_weather.acall", "get_weather"),
        ("get_weather.run", "get_weather"),
        ("Tool.get_weather", "get_weather"),
        ("weather_agent.get_weather", "get_weather"),
        ("execute_tool get_weather", "get_weather"),
        ("get_weather", "get_weather"),
        ("get-weather", "get-weather"),
    ],
)
def test_a_tool_span_without_tool_name_is_named_from_its_span_name(span_name: str, tool: str) -> None:
    facts = span_facts(tool_span(span_name, {"input.value": KWARGS, "output.value": RESULT}))
    assert facts.tool == ToolCall(tool, {"city": "Paris"}, RESULT)
    assert facts.sources["tool"] == "openinference:span name"


@pytest.mark.parametrize(
    "span_name", ["FunctionTool.acall", "SimpleTool", "Tool.__call__", "Tool", "call tool now", "", "a.b.c.d"]
)
def test_a_span_named_after_a_tool_class_or_no_name_records_no_call(span_name: str) -> None:
    assert span_facts(tool_span(span_name, {"input.value": KWARGS, "output.value": RESULT})).tool is None


def test_tool_name_attribute_wins_over_the_span_name() -> None:
    facts = span_facts(tool_span("Tool.lookup", {"tool.name": "get_weather", "input.value": KWARGS}))
    assert facts.tool is not None and facts.tool.name == "get_weather"
    assert facts.tool.arguments == {"city": "Paris"}


@pytest.mark.parametrize(
    "arguments",
    [
        KWARGS,
        json.dumps({"args": [], "kwargs": {"city": "Paris"}}),
        json.dumps({"city": "Paris"}),
    ],
)
def test_dspy_react_run_counts_its_tool_call(arguments: str) -> None:
    """A DSPy-shaped trace: the ReAct module's root span, the tool span named after the call."""
    root = SpanRecord(
        trace_id="d" * 32,
        span_id="1" * 16,
        parent_span_id="",
        name="ReAct.forward",
        kind="Internal",
        start_time_ns=1,
        end_time_ns=4,
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"question": "What is the weather in Paris?"}),
            "input.mime_type": "application/json",
            "output.value": json.dumps({"answer": "It is sunny in Paris."}),
            "output.mime_type": "application/json",
        },
    )
    tool = tool_span("get_weather.__call__", {"input.value": arguments, "output.value": RESULT})
    (run,) = runs_from_spans([root, tool])
    assert [(call.name, call.arguments, call.result) for call in run.tool_calls or ()] == [
        ("get_weather", {"city": "Paris"}, RESULT)
    ]
    assert build("tool_call_accuracy", expected_tool="get_weather").run(run).score == 1.0


def test_a_json_string_result_is_that_string() -> None:
    """DSPy records a tool's string return JSON-encoded (``"\\"{...}\\""``, mime type application/json)."""
    attributes = {"input.value": KWARGS, "output.value": json.dumps(RESULT), "output.mime_type": "application/json"}
    facts = span_facts(tool_span("get_weather.__call__", attributes))
    assert facts.tool is not None and facts.tool.result == RESULT


def test_dspy_react_finish_marker_is_no_tool_call() -> None:
    """ReAct ends its loop by calling its own ``finish`` tool (no arguments, "Completed."): not the agent's work."""
    attributes = {"input.value": json.dumps({"kwargs": {}}), "output.value": json.dumps("Completed.")}
    assert span_facts(tool_span("finish.__call__", {**attributes, "output.mime_type": "application/json"})).tool is None
    named = {"tool.name": "finish", "input.value": json.dumps({"reason": "done"}), "output.value": "ok"}
    assert span_facts(tool_span("finish", named)).tool is not None  # a tool of the user's called finish


def test_the_recorded_dspy_react_run_scores_its_tool_call() -> None:
    """The real DSPy 3.4 recording: tool_call_accuracy scored 0 before tool spans were named from their span name."""
    spans, logs = load("dspy_openinference", FIXTURES / "frameworks")
    (run,) = runs_from_spans(spans, logs)
    assert [call.name for call in run.tool_calls or ()] == ["get_weather"]
    assert build("tool_call_accuracy", expected_tool="get_weather").run(run).score == 1.0
