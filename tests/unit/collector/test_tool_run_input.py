"""A tool span that records the framework's run(input, options) call reads as the model's arguments (#29).

openinference-instrumentation-beeai (0.1.30, beeai-framework 0.1.85) records a tool's ``input.value`` as
BeeAI's ``Tool.run`` call: ``{"input": {"city": "Paris"}, "options": null}``. The arguments are the
``input``; anything else keeps its shape.
"""

from __future__ import annotations

import json

from spanscore.collector.conventions import span_facts
from spanscore.collector.conventions.parsing import call_arguments
from spanscore.records import SpanRecord


def tool_span(input_value: object) -> SpanRecord:
    return SpanRecord(
        trace_id="a" * 32,
        span_id="2" * 16,
        parent_span_id="1" * 16,
        name="get_weather",
        kind="Internal",
        start_time_ns=1,
        end_time_ns=2,
        attributes={
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "input.value": json.dumps(input_value),
            "output.value": '{"temp_c": 22, "sky": "sunny"}',
        },
    )


def test_beeai_run_call_is_unwrapped_to_its_input() -> None:
    facts = span_facts(tool_span({"input": {"city": "Paris"}, "options": None}))
    assert facts.tool is not None and facts.tool.arguments == {"city": "Paris"}


def test_run_options_do_not_change_the_arguments() -> None:
    assert call_arguments({"input": {"city": "Paris"}, "options": {"signal": None}}) == {"city": "Paris"}


def test_other_shapes_are_kept() -> None:
    assert call_arguments({"input": "Paris", "options": None}) == {"input": "Paris", "options": None}
    assert call_arguments({"input": {"city": "Paris"}, "units": "C"}) == {"input": {"city": "Paris"}, "units": "C"}
    assert call_arguments({"input": {"city": "Paris"}}) == {"input": {"city": "Paris"}}
