"""The multi-turn fake model: the first turn is the single-turn fake's conversation, later turns their own."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.fakes import fake_openai_chat
from tests.fakes.fake_openai_turns import CITY_ANSWERS, TOOL_RESULTS, FakeOpenAITurns

PARIS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is the weather in Paris?"}]


def post(url: str, body: dict[str, Any]) -> bytes:
    request = urllib.request.Request(
        f"{url}/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # loopback only
        return bytes(response.read())


def answered(messages: list[dict[str, Any]], call_id: str, city: str) -> list[dict[str, Any]]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }
    return [
        *messages,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": TOOL_RESULTS[city]},
    ]


def test_first_turn_is_the_single_turn_conversation() -> None:
    with FakeOpenAITurns() as fake:
        for messages in (PARIS, answered(PARIS, "call_weather_1", "Paris")):
            body = {"model": "gpt-4o-mini", "messages": messages}
            assert json.loads(post(fake.url, body)) == fake_openai_chat._completion(body)


def test_a_later_turn_calls_the_tool_again_for_its_own_city() -> None:
    first = [*answered(PARIS, "call_weather_1", "Paris"), {"role": "assistant", "content": CITY_ANSWERS["Paris"]}]
    second = [*first, {"role": "user", "content": [{"type": "text", "text": "And in Rome?"}]}]
    with FakeOpenAITurns() as fake:
        ask = json.loads(post(fake.url, {"messages": second}))["choices"][0]["message"]
        assert ask["tool_calls"][0]["id"] == "call_weather_2"
        assert json.loads(ask["tool_calls"][0]["function"]["arguments"]) == {"city": "Rome"}
        reply = json.loads(post(fake.url, {"messages": answered(second, "call_weather_2", "Rome")}))
        assert reply["choices"][0]["message"]["content"] == CITY_ANSWERS["Rome"]


def test_a_streamed_reply_carries_the_same_message_and_usage() -> None:
    body = {"messages": PARIS, "stream": True, "stream_options": {"include_usage": True}}
    with FakeOpenAITurns() as fake:
        events = post(fake.url, body).decode().split("\n\n")
        whole = json.loads(post(fake.url, {"messages": PARIS}))
    assert events[-2:] == ["data: [DONE]", ""]
    chunks = [json.loads(event.removeprefix("data: ")) for event in events[:-2]]
    delta = chunks[0]["choices"][0]["delta"]
    assert delta["tool_calls"][0]["function"] == whole["choices"][0]["message"]["tool_calls"][0]["function"]
    assert chunks[1]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["usage"] == whole["usage"]
