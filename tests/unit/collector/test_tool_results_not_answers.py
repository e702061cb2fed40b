"""A tool's result is never part of the answer, in every dialect that carries results inside messages.

GenAI ``parts`` messages carry results as ``tool_call_response`` parts and AI SDK messages as
``tool-result`` parts (Mastra reuses the AI SDK shapes). In a ``tool`` message the result is the
content; in an assistant message (AI SDK 7's agent output, a provider-executed tool) it is only the
result of the call it answers. A result that is one JSON string (AI SDK 7 encodes every result) is
that string.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from spanscore.collector.conventions import span_facts
from spanscore.records import LogRecord, SpanRecord
from spanscore.run import Message, ToolCall
from spanscore.runs.assembly import runs_from_spans

ANSWER = "It is sunny and 22 C in Paris."
RESULT = json.dumps({"temp_c": 22, "sky": "sunny"})
CALL = ToolCall("get_weather", {"city": "Paris"}, RESULT, "call_1", 0)


def span(attributes: dict[str, str], name: str = "invoke_agent weather_agent") -> SpanRecord:
    return SpanRecord(
        trace_id="a" * 32,
        span_id="1" * 16,
        parent_span_id="",
        name=name,
        kind="Internal",
        start_time_ns=1,
        end_time_ns=2,
        attributes=attributes,
    )


GENAI_ANSWER = [
    {
        "role": "assistant",
        "parts": [
            {"type": "text", "content": ANSWER},
            {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}},
            {"type": "tool_call_response", "id": "call_1", "response": RESULT},
        ],
        "finish_reason": "stop",
    }
]
AI_SDK_ANSWER = [
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": ANSWER},
            {"type": "tool-call", "toolCallId": "call_1", "toolName": "get_weather", "input": {"city": "Paris"}},
            {
                "type": "tool-result",
                "toolCallId": "call_1",
                "toolName": "get_weather",
                "output": {"type": "text", "value": RESULT},
            },
        ],
    }
]


def test_genai_output_message_keeps_only_its_text_and_attaches_results_to_calls() -> None:
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.output.messages": json.dumps(GENAI_ANSWER)}
    facts = span_facts(span(attributes))
    assert facts.output == (Message("assistant", ANSWER, (CALL,)),)
    assert facts.tool_results == {"call_1": RESULT}


def test_genai_output_on_a_detail_log_record() -> None:
    log = LogRecord(
        time_ns=1,
        trace_id="a" * 32,
        span_id="1" * 16,
        event_name="gen_ai.client.inference.operation.details",
        severity_text="INFO",
        severity_number=9,
        body="",
        attributes={"gen_ai.output.messages": json.dumps(GENAI_ANSWER)},
    )
    (run,) = runs_from_spans([span({"gen_ai.operation.name": "chat"}, "chat")], [log])
    assert run.output_text == ANSWER
    assert run.all_tool_calls == (CALL,)


def test_genai_tool_message_content_is_its_result() -> None:
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": RESULT}]},
    ]
    facts = span_facts(span({"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(messages)}, "chat"))
    assert facts.input is not None and facts.input[1] == Message("tool", RESULT)


def test_ai_sdk_assistant_message_with_a_provider_executed_tool_result() -> None:
    prompt = {"system": "Be brief.", "messages": [{"role": "user", "content": "Weather in Paris?"}, *AI_SDK_ANSWER]}
    facts = span_facts(span({"ai.operationId": "ai.generateText", "ai.prompt": json.dumps(prompt)}, "ai.generateText"))
    assert facts.input is not None and facts.input[1].content == ANSWER
    assert facts.tool_results == {"call_1": RESULT}


def test_mastra_messages_in_ai_sdk_shape() -> None:
    attributes = {"mastra.span.type": "agent_run", "mastra.agent_run.output": json.dumps(AI_SDK_ANSWER)}
    facts = span_facts(span(attributes, "invoke_agent weather_agent"))
    assert facts.output is not None and [m.content for m in facts.output] == [ANSWER]


def test_a_json_encoded_string_result_is_that_string() -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.result": json.dumps(RESULT),
    }
    assert (span_facts(span(attributes, "execute_tool get_weather")).tool or CALL).result == RESULT
    structured = {**attributes, "gen_ai.tool.call.result": RESULT}
    assert (span_facts(span(structured, "execute_tool get_weather")).tool or CALL).result == RESULT


_TEXTS = st.text(alphabet="abc ", max_size=8)
_RESULTS = st.integers(0, 9).map(lambda n: f"RESULT-{n}")
_ROLES = st.sampled_from(["assistant", "user", "model", "system", "tool", None])
_GENAI_PART = st.one_of(
    st.builds(lambda text: {"type": "text", "content": text}, _TEXTS),
    st.builds(lambda n: {"type": "tool_call", "id": f"c{n}", "name": "t", "arguments": {}}, st.integers(0, 3)),
    st.builds(lambda n, r: {"type": "tool_call_response", "id": f"c{n}", "response": r}, st.integers(0, 3), _RESULTS),
)
_AI_SDK_PART = st.one_of(
    st.builds(lambda text: {"type": "text", "text": text}, _TEXTS),
    st.builds(lambda n: {"type": "tool-call", "toolCallId": f"c{n}", "toolName": "t", "input": {}}, st.integers(0, 3)),
    st.builds(
        lambda n, r: {"type": "tool-result", "toolCallId": f"c{n}", "output": {"type": "text", "value": r}},
        st.integers(0, 3),
        _RESULTS,
    ),
)


def _no_result_outside_tool_messages(messages: tuple[Message, ...] | None) -> None:
    # None is fine: a list with no text and no tool call fills no field (blank messages never do).
    for message in messages or ():
        assert message.role == "tool" or "RESULT" not in message.content, message


@settings(max_examples=150, deadline=None)
@given(st.lists(st.fixed_dictionaries({"role": _ROLES, "parts": st.lists(_GENAI_PART, max_size=5)}), max_size=3))
def test_genai_results_only_ever_fill_tool_messages(messages: list[dict[str, object]]) -> None:
    attributes = {"gen_ai.input.messages": json.dumps(messages), "gen_ai.output.messages": json.dumps(messages)}
    facts = span_facts(span({"gen_ai.operation.name": "chat", **attributes}, "chat"))
    _no_result_outside_tool_messages(facts.input)
    _no_result_outside_tool_messages(facts.output)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.fixed_dictionaries({"role": _ROLES, "content": st.lists(_AI_SDK_PART, max_size=5)}), max_size=3))
def test_ai_sdk_results_only_ever_fill_tool_messages(messages: list[dict[str, object]]) -> None:
    facts = span_facts(span({"ai.operationId": "ai.generateText", "ai.prompt": json.dumps({"messages": messages})}))
    _no_result_outside_tool_messages(facts.input)
