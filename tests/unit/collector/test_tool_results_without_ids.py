"""A tool result whose id names no call still answers the call it follows (#29).

The Google GenAI SDK's automatic function calling sends a function response without the id of the
call it answers, and opentelemetry-instrumentation-google-genai then makes one up (``NAME_INDEX``:
``get_weather_0``), so the result's id never equals the model's call id (``call_weather_1``). The
result still stands right after the call in the conversation: a result whose id matches no call
answers the oldest call still unanswered, so the run's tool call gets its result.
"""

from __future__ import annotations

import json

from spanscore.collector.conventions import span_facts
from spanscore.records import SpanRecord
from spanscore.runs.assembly import runs_from_spans

RESULT = json.dumps({"temp_c": 22, "sky": "sunny"})


def call(call_id: str, city: str) -> dict[str, object]:
    return {"type": "tool_call", "id": call_id, "name": "get_weather", "arguments": {"city": city}}


def response(response_id: str, result: str) -> dict[str, object]:
    return {"type": "tool_call_response", "id": response_id, "response": {"result": result}}


def model_span(span_id: str, inputs: list[dict[str, object]], outputs: list[dict[str, object]]) -> SpanRecord:
    return SpanRecord(
        trace_id="a" * 32,
        span_id=span_id,
        parent_span_id="1" * 16,
        name="generate_content gemini-2.5-flash",
        kind="Client",
        start_time_ns=int(span_id, 16),
        end_time_ns=int(span_id, 16) + 1,
        attributes={
            "gen_ai.operation.name": "generate_content",
            "gen_ai.provider.name": "gemini",
            "gen_ai.request.model": "gemini-2.5-flash",
            "gen_ai.input.messages": json.dumps(inputs),
            "gen_ai.output.messages": json.dumps(outputs),
        },
    )


def test_a_result_with_an_unknown_id_answers_the_call_before_it() -> None:
    history = [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris and Rome?"}]},
        {"role": "assistant", "parts": [call("call_weather_1", "Paris"), call("call_weather_2", "Rome")]},
        {"role": "user", "parts": [response("get_weather_0", RESULT), response("get_weather_1", "rainy")]},
    ]
    facts = span_facts(model_span("2" * 16, history, []))
    assert facts.tool_results == {"call_weather_1": RESULT, "call_weather_2": "rainy"}


def test_a_result_with_a_known_id_keeps_it() -> None:
    history = [
        {"role": "assistant", "parts": [call("call_weather_1", "Paris"), call("call_weather_2", "Rome")]},
        {"role": "user", "parts": [response("call_weather_2", "rainy"), response("unknown", RESULT)]},
    ]
    facts = span_facts(model_span("2" * 16, history, []))
    assert facts.tool_results == {"call_weather_2": "rainy", "call_weather_1": RESULT}


def test_a_result_with_no_call_before_it_answers_nothing() -> None:
    history = [{"role": "user", "parts": [response("get_weather_0", RESULT)]}]
    facts = span_facts(model_span("2" * 16, history, []))
    assert "call_weather_1" not in facts.tool_results


def test_the_run_gets_the_result_of_its_call() -> None:
    question = {"role": "user", "parts": [{"type": "text", "content": "What is the weather in Paris?"}]}
    asked = {"role": "assistant", "parts": [call("call_weather_1", "Paris")]}
    answered = {"role": "user", "parts": [response("get_weather_0", RESULT)]}
    answer = {"role": "assistant", "parts": [{"type": "text", "content": "It is sunny and 22 C in Paris."}]}
    root = SpanRecord(
        trace_id="a" * 32,
        span_id="1" * 16,
        parent_span_id="",
        name="invoke_agent weather_agent",
        kind="Internal",
        start_time_ns=1,
        end_time_ns=100,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"},
    )
    spans = [
        root,
        model_span("2" * 16, [question], [asked]),
        model_span("3" * 16, [question, asked, answered], [answer]),
    ]
    (run,) = runs_from_spans(spans)
    assert [(c.name, c.id, c.result) for c in run.tool_calls or ()] == [("get_weather", "call_weather_1", RESULT)]
