"""A loopback OpenAI-compatible chat server for multi-turn agent recordings, streamed or not.

``fake_openai_chat`` answers one question; agent frameworks with conversation
memory send a second question with the first turn's messages in front of it,
where that fake would see the old tool result and answer without calling the
tool. Here each user turn is scripted on its own: the model looks only at the
messages after the last user message, asks for ``get_weather`` for the city
that message names (tool call id ``call_weather_<turn>``, the turn counted in
user messages) until a tool result follows, then gives that city's answer.
The first turn is the Paris conversation of ``fake_openai_chat`` with the same
ids, text and token counts, so single-turn fixtures read the same either way.

``POST /v1/chat/completions`` is served with ``"stream": true`` (server-sent
events, usage in a last chunk when ``stream_options.include_usage`` is set) or
without. Bind port 0 and read ``url``; ``requests`` keeps the bodies received.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.fake_openai_chat import FINAL_ANSWER, MODEL
from tests.fakes.loopback import LoopbackHTTPServer

CITY_ANSWERS = {"Paris": FINAL_ANSWER, "Rome": "It is cloudy and 17 C in Rome."}
"""The cities the model knows, and its answer once the tool has reported that city's weather."""
TOOL_RESULTS = {
    "Paris": json.dumps({"temp_c": 22, "sky": "sunny"}),
    "Rome": json.dumps({"temp_c": 17, "sky": "cloudy"}),
}
"""What a recorder's ``get_weather`` tool returns for each city (the answers above are read from these)."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _turn(messages: list[dict[str, Any]]) -> tuple[int, str, bool]:
    """(turn number, city asked about, whether a tool result followed the question)."""
    users = [index for index, message in enumerate(messages) if message.get("role") == "user"]
    if not users:
        return 1, "Paris", False
    question = _text(messages[users[-1]].get("content"))
    city = next((name for name in CITY_ANSWERS if name in question), "Paris")
    answered = any(message.get("role") == "tool" for message in messages[users[-1] :])
    return len(users), city, answered


def _message(messages: list[dict[str, Any]]) -> tuple[dict[str, Any], str, tuple[int, int]]:
    turn, city, answered = _turn(messages)
    if answered:
        return {"role": "assistant", "content": CITY_ANSWERS[city]}, "stop", (60, 12)
    call = {
        "id": f"call_weather_{turn}",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls", (40, 8)


def completion(request: dict[str, Any]) -> dict[str, Any]:
    """The whole (non-streamed) chat completion for ``request``."""
    messages = request.get("messages") or []
    message, finish, usage = _message(messages)
    return {
        "id": f"chatcmpl-{len(messages)}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": request.get("model", MODEL),
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


def chunks(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The same completion as streamed chunks: the message delta, the finish reason, then the usage."""
    whole = completion(request)
    choice = whole["choices"][0]
    message = choice["message"]
    head = {key: whole[key] for key in ("id", "created", "model", "system_fingerprint")}
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": 0, **call} for call in message["tool_calls"]]
    yield {**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    finish = {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}
    yield {**head, "object": "chat.completion.chunk", "choices": [finish]}
    if (request.get("stream_options") or {}).get("include_usage"):
        yield {**head, "object": "chat.completion.chunk", "choices": [], "usage": whole["usage"]}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_error(404)
            return
        self.server.requests.append(body)
        if body.get("stream"):
            self._stream(body)
            return
        payload = json.dumps(completion(body)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, body: dict[str, Any]) -> None:
        events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks(body)]
        payload = ("".join(events) + "data: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return


class _Server(ThreadingHTTPServer):
    requests: list[dict[str, Any]]


class FakeOpenAITurns(LoopbackHTTPServer):
    """Context manager running the multi-turn fake in a daemon thread on 127.0.0.1, port 0."""

    def __init__(self) -> None:
        super().__init__(_Handler, _Server)
        self._server.requests = []

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self._server.requests

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"
