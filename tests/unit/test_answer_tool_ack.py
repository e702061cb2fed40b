"""A framework's answer tool is left out of the run's calls even when its result is an acknowledgement (#29).

BeeAI's RequirementAgent answers through its own ``final_answer`` tool, like smolagents, but the tool's
result is "Message has been sent", not the answer; a user's own tool that takes the answer as its one
argument is still a call.
"""

from __future__ import annotations

from spanscore.answer import without_answer_tool
from spanscore.run import Message, ToolCall

ANSWER = "It is sunny and 22 C in Paris."
WEATHER = ToolCall("get_weather", {"city": "Paris"}, '{"temp_c": 22}', "call_1", 0)
OUTPUT = (Message("assistant", ANSWER),)


def test_beeai_final_answer_with_an_acknowledgement_is_not_a_call() -> None:
    final = ToolCall("final_answer", {"response": ANSWER}, "Message has been sent", "call_2", 1)
    assert without_answer_tool((WEATHER, final), OUTPUT) == (WEATHER,)


def test_a_users_tool_taking_the_answer_is_still_a_call() -> None:
    send = ToolCall("send_email", {"body": ANSWER}, "sent", "call_2", 1)
    assert without_answer_tool((WEATHER, send), OUTPUT) == (WEATHER, send)


def test_final_answer_with_another_text_is_still_a_call() -> None:
    final = ToolCall("final_answer", {"response": "something else"}, "Message has been sent", "call_2", 1)
    assert without_answer_tool((WEATHER, final), OUTPUT) == (WEATHER, final)
