"""The general reading rules the recorded framework fixtures rely on, at their edges (what they must not catch)."""

from __future__ import annotations

import json

from spanscore.collector.conventions import span_facts
from spanscore.collector.conventions.openinference import agent_label, extract, is_object_repr
from spanscore.collector.conventions.parsing import model_name, tool_call
from spanscore.records import SpanRecord
from spanscore.run import Message, ToolCall
from spanscore.runs.assembly import runs_from_spans
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


def _tool_arguments(attributes: dict[str, str]) -> object:
    tool = extract(_span("s", "", 0, name=attributes["tool.name"], **attributes)).tool
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
    facts = extract(_span("s", "", 0, name="user.initiate_chat", **attributes))
    assert facts.input == (Message("user", QUESTION),)
    assert facts.agent_name == "user"  # no recipient named: the span's own agent
    named = {**attributes, "ag2.recipient.name": "weather_agent"}
    facts = extract(_span("s", "", 0, name="user.initiate_chat", **named))
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


def _span(span_id: str, parent: str, start: int, *, name: str | None = None, **attributes: str) -> SpanRecord:
    return SpanRecord(
        trace_id="ab" * 16,
        span_id=span_id,
        parent_span_id=parent,
        name=name or span_id,
        kind="Internal",
        start_time_ns=start,
        end_time_ns=start + 10,
        attributes=attributes,
    )


def test_a_stringified_message_object_is_never_read_as_the_prompt() -> None:
    pydantic_str = (
        "id='84dc' source='user' models_usage=None metadata={} created_at=datetime.datetime(2026, 1, 1) "
        f"content='{QUESTION}' type='TextMessage'"
    )
    assert is_object_repr(pydantic_str) and is_object_repr("StopEvent(result='x')")
    for text in (QUESTION, "x=5 and y=6", "set timeout=30 then retry with limit=5 and depth=2", "a = 1 b = 2 c = 3"):
        assert not is_object_repr(text), text
    stringified = {"messages": [pydantic_str], "cancellation_token": "<CancellationToken object at 0x1>"}
    agent = {"openinference.span.kind": "AGENT", "input.value": json.dumps(stringified)}
    assert span_facts(_span("a", "", 0, **agent)).input is None
    written = {"messages": [QUESTION, pydantic_str]}
    facts = span_facts(_span("a", "", 0, **{**agent, "input.value": json.dumps(written)}))
    assert facts.input == (Message("user", QUESTION),)


def test_function_result_objects_in_a_model_call_are_tool_results() -> None:
    result = {"name": "get_weather", "content": RESULT, "call_id": "call_1", "is_error": False}
    llm = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": QUESTION,
        "llm.input_messages.1.message.role": "function",
        "llm.input_messages.1.function.0": json.dumps(result),
    }
    facts = span_facts(_span("l", "", 0, **llm))
    assert facts.input == (Message("user", QUESTION), Message("tool", RESULT))
    assert facts.tool_results == {"call_1": RESULT}


def test_a_tool_span_inside_a_tool_span_for_the_same_call_is_one_call() -> None:
    agent = _span("a", "", 0, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"})
    outer = {"openinference.span.kind": "TOOL", "tool.name": "get_weather", "input.value": '{"city": "Paris"}'}
    inner = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "c1"}
    spans = [agent, _span("t", "a", 1, **outer, **{"output.value": RESULT}), _span("e", "t", 2, **inner)]
    (run,) = runs_from_spans(spans)
    assert run.tool_calls == (ToolCall("get_weather", {"city": "Paris"}, RESULT, id="c1", order=0),)
    # Side by side, or inside a tool span for another call, they are calls of their own.
    beside = [agent, _span("t", "a", 1, **outer), _span("e", "a", 2, **inner)]
    (run,) = runs_from_spans(beside)
    assert [call.id for call in run.tool_calls or ()] == [None, "c1"]
    other = {**inner, "gen_ai.tool.name": "get_time"}
    (run,) = runs_from_spans([agent, _span("t", "a", 1, **outer), _span("e", "t", 2, **other)])
    assert [call.name for call in run.tool_calls or ()] == ["get_weather", "get_time"]
    other_id = {**outer, "tool_call.id": "c0"}
    (run,) = runs_from_spans([agent, _span("t", "a", 1, **other_id), _span("e", "t", 2, **inner)])
    assert [call.id for call in run.tool_calls or ()] == ["c0", "c1"]


def test_users_turn_of_a_later_call_in_the_turn_is_the_prompt_before_its_tool_work() -> None:
    asked = Message("user", QUESTION)
    call = Message("assistant", "", tool_calls=(ToolCall("get_weather", {"city": "Paris"}, id="c1"),))
    answered = Message("assistant", "It is sunny.")
    rome = Message("user", "And in Rome?")
    assert users_turn((asked, call, Message("tool", RESULT))) == (asked,)
    assert users_turn((asked, call, Message("tool", RESULT), answered, rome, call, Message("tool", RESULT))) == (rome,)
    # an assistant that also said something is not tool work: no turn of the user's to cut out
    spoke = Message("assistant", "Let me look.", tool_calls=call.tool_calls)
    assert users_turn((asked, spoke, Message("tool", RESULT))) == (asked, spoke, Message("tool", RESULT))


def test_a_function_response_gives_what_the_tool_returned() -> None:
    wrapped = json.dumps({"id": "c1", "name": "get_weather", "response": {"result": RESULT}})
    assert tool_call("get_weather", "{}", wrapped, None).result == RESULT
    assert tool_call("get_weather", "{}", json.dumps({"result": RESULT}), None).result == RESULT
    # an object the tool returned is sent as it is, even one with a single "result" key holding an object
    kept = json.dumps({"result": {"temp_c": 22}})
    assert tool_call("get_weather", "{}", kept, None).result == kept
    other = json.dumps({"name": "get_weather", "response": {"a": 1}, "extra": True})  # not a FunctionResponse
    assert tool_call("get_weather", "{}", other, None).result == other


def test_a_routing_prefix_naming_the_provider_is_dropped_from_the_model() -> None:
    assert model_name("openai/gpt-4o-mini", "openai") == "gpt-4o-mini"
    assert model_name("openai/gpt-4o", "openrouter") == "openai/gpt-4o"  # another provider's id: kept
    assert model_name("meta-llama/Llama-3.1-8B", "huggingface") == "meta-llama/Llama-3.1-8B"
    assert model_name("gpt-4o-mini", "openai") == "gpt-4o-mini"
    assert model_name("openai/", "openai") == "openai/"
    assert model_name("openai/gpt-4o-mini", None) == "openai/gpt-4o-mini"
