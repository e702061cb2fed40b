"""The general reading rules the recorded framework fixtures rely on, at their edges (what they must not catch)."""

from __future__ import annotations

import json

from spanscore.collector.conventions.openinference import agent_label, extract
from spanscore.collector.conventions.parsing import tool_call
from spanscore.records import SpanRecord
from spanscore.run import Message, ToolCall
from spanscore.runs.fields import users_turn, without_answer_tool

QUESTION = "What is the weather in Paris?"
RESULT = json.dumps({"temp_c": 22, "sky": "sunny"})


def test_users_turn_is_what_the_user_added_after_the_history() -> None:
    history = (
        Message("user", QUESTION),
        Message("assistant", "", tool_calls=(ToolCall("get_weather", {"city": "Paris"}, id="c1"),)),
        Message("tool", RESULT),
        Message("assistant", "It is sunny."),
        Message("user", "And in Rome?"),
        Message("user", "In Celsius."),
    )
    assert users_turn(history) == history[-2:]
    assert users_turn(history[:1]) == history[:1]  # a first turn is all the user's
    assert users_turn(history[:4]) == history[:4]  # ends with the assistant: no turn of the user's to cut out


def test_agent_label_is_a_method_span_owner_and_otherwise_the_name() -> None:
    assert agent_label("weather_agent.run") == "weather_agent"
    assert agent_label("FunctionAgent.arun") == "FunctionAgent"
    assert agent_label("Agent workflow") == "Agent workflow"
    assert agent_label("support.v2") == "support.v2"  # not a method call: a dotted name is kept whole
    assert agent_label("") is None


def test_a_tool_output_object_naming_its_tool_gives_its_content() -> None:
    envelope = {"blocks": [{"text": RESULT}], "tool_name": "get_weather", "raw_output": RESULT, "is_error": False}
    call = tool_call("get_weather", json.dumps({"kwargs": {"city": "Paris"}}), json.dumps(envelope), None)
    assert (call.arguments, call.result) == ({"city": "Paris"}, RESULT)
    plain = {"tool": "get_weather", "raw_output": RESULT}  # names no tool_name: a result of its own
    assert tool_call("get_weather", "{}", json.dumps(plain), None).result == json.dumps(plain)
    # Keyword arguments beside other keys are a tool's own argument named kwargs, not a recorded call.
    own = {"kwargs": {"city": "Paris"}, "units": "metric"}
    assert tool_call("get_weather", json.dumps(own), RESULT, None).arguments == own


def test_a_tool_result_message_gives_its_content_alone_or_beside_a_success_flag() -> None:
    message = {"name": "get_weather", "role": "function", "content": RESULT}
    for output in (message, [True, message], [False, message], {**message, "role": "tool", "tool_call_id": "c1"}):
        assert tool_call("get_weather", "{}", json.dumps(output), None).result == RESULT
    # Not a message carrying a tool result: kept as the tool returned it.
    for output in (
        [True, {"content": RESULT}],
        [1, message],
        [True, message, "more"],
        {"role": "user", "content": "hi"},
    ):
        assert tool_call("get_weather", "{}", json.dumps(output), None).result == json.dumps(output)


def _span(name: str, attributes: dict[str, str]) -> SpanRecord:
    return SpanRecord(
        trace_id="t",
        span_id="s",
        parent_span_id="",
        name=name,
        kind="Internal",
        start_time_ns=0,
        end_time_ns=1,
        attributes=attributes,
    )


def _tool_arguments(attributes: dict[str, str]) -> object:
    tool = extract(_span(attributes["tool.name"], attributes)).tool
    assert tool is not None
    return tool.arguments


def test_an_openinference_tool_span_takes_the_model_s_arguments_over_its_input_value() -> None:
    call = {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}
    attributes = {"openinference.span.kind": "TOOL", "tool.name": "get_weather", "input.value": json.dumps(call)}
    assert _tool_arguments(attributes) == call
    attributes["tool_call.function.arguments"] = json.dumps({"city": "Paris"})
    assert _tool_arguments(attributes) == {"city": "Paris"}


def test_a_chat_span_s_agent_is_its_recipient_and_its_input_the_message_it_sends() -> None:
    attributes = {
        "openinference.span.kind": "AGENT",
        "agent.name": "user",
        "input.value": json.dumps({"message": QUESTION, "sender": "user", "recipient": "weather_agent"}),
        "input.mime_type": "application/json",
    }
    facts = extract(_span("user.initiate_chat", attributes))
    assert facts.input == (Message("user", QUESTION),)
    assert facts.agent_name == "user"  # no recipient named: the span's own agent
    facts = extract(_span("user.initiate_chat", {**attributes, "ag2.recipient.name": "weather_agent"}))
    assert (facts.agent_name, facts.sources["agent_name"]) == ("weather_agent", "openinference:ag2.recipient.name")


def test_only_a_last_call_that_hands_the_answer_back_is_an_answer_tool() -> None:
    answer = "It is sunny and 22 C in Paris."
    output = (Message("assistant", answer),)
    weather = ToolCall("get_weather", {"city": "Paris"}, RESULT, id="c1")
    final = ToolCall("final_answer", {"answer": answer}, answer, id="c2")
    assert without_answer_tool((weather, final), output) == (weather,)
    acting = [
        ToolCall("send_email", {"body": answer, "to": "a@example.com"}, answer),  # more than the answer
        ToolCall("translate", {"text": answer}, "Il fait beau."),  # its result is not the answer
    ]
    for call in acting:
        assert without_answer_tool((call,), output) == (call,)
    assert without_answer_tool((final, weather), output) == (final, weather)  # not the last call
