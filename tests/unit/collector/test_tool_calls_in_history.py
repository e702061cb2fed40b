"""A turn's tool calls seen only in its later model calls' history are still the run's calls (#29).

LiteLLM's own OpenTelemetry callback writes GenAI ``parts`` messages with the OpenAI fields beside
the parts: an assistant message's ``tool_calls`` and a tool message's ``tool_call_id`` are not parts.
Its ``gen_ai.output.messages`` for a step that calls a tool has no parts at all, so the call (with its
id) is only in the next model call's input, followed by its result.
"""

from __future__ import annotations

import json

from spanscore.collector.conventions import span_facts
from spanscore.records import SpanRecord
from spanscore.run import Message, ToolCall
from spanscore.runs.assembly import runs_from_spans

RESULT = json.dumps({"temp_c": 22, "sky": "sunny"})
SYSTEM = {"role": "system", "parts": [{"type": "text", "content": "You are a weather assistant."}]}


def user(text: str) -> dict[str, object]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def asked(call_id: str, city: str) -> dict[str, object]:
    """LiteLLM's assistant message: an empty text part and the OpenAI tool_calls beside the parts."""
    function = {"name": "get_weather", "arguments": json.dumps({"city": city})}
    return {
        "role": "assistant",
        "parts": [{"type": "text", "content": ""}],
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def answered(call_id: str) -> dict[str, object]:
    return {"role": "tool", "parts": [{"type": "text", "content": RESULT}], "tool_call_id": call_id}


def answer(city: str) -> dict[str, object]:
    return {"role": "assistant", "parts": [{"type": "text", "content": f"It is sunny in {city}."}]}


NO_CALL = [{"role": "assistant", "parts": [], "finish_reason": "tool_calls"}]


def span(span_id: str, parent: str, attributes: dict[str, str], name: str = "litellm_request") -> SpanRecord:
    return SpanRecord(
        trace_id="a" * 32,
        span_id=span_id * 16,
        parent_span_id=parent * 16 if parent else "",
        name=name,
        kind="Internal",
        start_time_ns=int(span_id, 16) * 10,
        end_time_ns=int(span_id, 16) * 10 + 5,
        attributes=attributes,
    )


def model_call(span_id: str, inputs: list[dict[str, object]], outputs: list[dict[str, object]]) -> SpanRecord:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
    }
    return span(span_id, "1", attributes)


def test_openai_fields_beside_parts_are_read() -> None:
    facts = span_facts(model_call("2", [SYSTEM, user("Paris?"), asked("call_1", "Paris"), answered("call_1")], []))
    assert facts.input is not None
    assert facts.input[1] == Message("assistant", "", (ToolCall("get_weather", {"city": "Paris"}, None, "call_1", 0),))
    assert facts.input[2] == Message("tool", RESULT)
    assert facts.tool_results == {"call_1": RESULT}


def test_a_call_only_in_a_later_history_is_the_turns_call_with_its_result() -> None:
    root = span("1", "", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}, "agent")
    first_turn = [user("Paris?"), asked("call_1", "Paris"), answered("call_1"), answer("Paris")]
    spans = [
        root,
        model_call("2", [SYSTEM, *first_turn, user("Rome?")], NO_CALL),
        model_call(
            "3", [SYSTEM, *first_turn, user("Rome?"), asked("call_2", "Rome"), answered("call_2")], [answer("Rome")]
        ),
    ]
    (run,) = runs_from_spans(spans)
    assert run.input_text == "Rome?" and run.output_text == "It is sunny in Rome."
    assert [(c.name, c.arguments, c.id, c.result) for c in run.tool_calls or ()] == [
        ("get_weather", {"city": "Rome"}, "call_2", RESULT)
    ]


def test_a_call_in_both_output_and_history_is_one_call() -> None:
    root = span("1", "", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}, "agent")
    spans = [
        root,
        model_call("2", [user("Paris?")], [asked("call_1", "Paris")]),
        model_call("3", [user("Paris?"), asked("call_1", "Paris"), answered("call_1")], [answer("Paris")]),
    ]
    (run,) = runs_from_spans(spans)
    assert [(c.id, c.result) for c in run.tool_calls or ()] == [("call_1", RESULT)]
