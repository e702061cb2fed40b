"""A tiny OpenAI-compatible chat completions server on loopback, for recording real instrumentation spans.

The conversation is scripted: when the last message is not a tool result the model asks for
``get_weather`` for the city the latest user message names (Paris unless it names Rome), with the
call id ``call_weather_N`` for the N-th user message, under the name the request offers it by
(Semantic Kernel offers a plugin's function as ``PLUGIN-get_weather``, and a real model calls it so);
after a tool result it answers with the final text (through a ``final_answer`` tool when the request
offers one, as smolagents and BeeAI expect, under the argument name it declares). A
conversation that goes on (a second user turn) so gets a second tool call and answer, the
way an agent framework's multi-turn session would.
``POST /v1/chat/completions`` is served, as one JSON body or, when the request asks to
``stream``, as server-sent chunks of the same completion (usage in a last chunk). Bind port 0 and read ``url``.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.loopback import LoopbackHTTPServer

MODEL = "gpt-4o-mini"
TOOL_CALL_ID = "call_weather_1"
TOOL_ARGUMENTS = {"city": "Paris"}
FINAL_ANSWER = "It is sunny and 22 C in Paris."
SECOND_CITY = "Rome"


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _is_tool_result(message: dict[str, Any]) -> bool:
    """A tool-role message, or smolagents' way of returning one (a user message starting ``Observation:``).

    smolagents merges a new task into the previous observation's message (``New task:``): that is a question.
    """
    if message.get("role") == "tool":
        return True
    text = _text(message.get("content"))
    return message.get("role") == "user" and text.startswith("Observation:") and "New task:" not in text


def _tool_names(request: dict[str, Any]) -> set[str]:
    return {str((tool.get("function") or {}).get("name")) for tool in request.get("tools") or ()}


def _answer_argument(request: dict[str, Any]) -> str:
    """The name the offered ``final_answer`` tool takes its answer by (smolagents: answer, BeeAI: response)."""
    for tool in request.get("tools") or ():
        function = tool.get("function") or {}
        names = list((function.get("parameters") or {}).get("properties") or {})
        if function.get("name") == "final_answer" and len(names) == 1:
            return str(names[0])
    return "answer"


def _weather_tool(request: dict[str, Any]) -> str:
    """``get_weather``, or the plugin-qualified name (``PLUGIN-get_weather``) the request offers it by."""
    names = _tool_names(request)
    qualified = sorted(name for name in names if name.endswith("-get_weather"))
    return qualified[0] if qualified and "get_weather" not in names else "get_weather"


def _call(name: str, call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def _dspy_fields(messages: list[dict[str, Any]]) -> str | None:
    """DSPy's reply as text fields (``[[ ## name ## ]]``) when the request is a DSPy prompt, else None.

    DSPy's ReAct asks the model for its next step as text fields, not as a tool call: look the weather up,
    then ``finish`` once the trajectory holds an observation; its extract step then asks for the answer.
    """
    system = _text(messages[0].get("content")) if messages and messages[0].get("role") == "system" else ""
    if "[[ ## " not in system:
        return None
    last = _text(messages[-1].get("content"))
    city = SECOND_CITY if SECOND_CITY in last else TOOL_ARGUMENTS["city"]
    if "next_tool_name" not in system:
        fields = {"reasoning": "The tool says it is sunny.", "answer": FINAL_ANSWER.replace("Paris", city)}
    elif "observation_0" in last:
        fields = {"next_thought": "I have the weather.", "next_tool_name": "finish", "next_tool_args": "{}"}
    else:
        fields = {
            "next_thought": "I should look the weather up.",
            "next_tool_name": "get_weather",
            "next_tool_args": json.dumps({"city": city}),
        }
    return "\n\n".join(f"[[ ## {name} ## ]]\n{value}" for name, value in fields.items()) + "\n\n[[ ## completed ## ]]"


def _completion(request: dict[str, Any]) -> dict[str, Any]:
    messages = request.get("messages") or []
    dspy = _dspy_fields(messages)
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user" and not _is_tool_result(m)]
    city = SECOND_CITY if users and SECOND_CITY in users[-1] else TOOL_ARGUMENTS["city"]
    if dspy is not None:
        message: dict[str, Any] = {"role": "assistant", "content": dspy}
        finish, usage = "stop", (50, 10)
    elif messages and _is_tool_result(messages[-1]):
        message = {"role": "assistant", "content": FINAL_ANSWER.replace("Paris", city)}
        finish, usage = "stop", (60, 12)
        if "final_answer" in _tool_names(request):
            answer = {_answer_argument(request): message["content"]}
            message = _call("final_answer", f"call_final_{len(users)}", answer)
            finish = "tool_calls"
    else:
        message = _call(
            _weather_tool(request), TOOL_CALL_ID if len(users) <= 1 else f"call_weather_{len(users)}", {"city": city}
        )
        finish, usage = "tool_calls", (40, 8)
    return {
        "id": f"chatcmpl-{len(messages)}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": request.get("model", MODEL),
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_error(404)
            return
        completion = _completion(body)
        if body.get("stream"):
            self._stream(completion)
            return
        payload = json.dumps(completion).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, completion: dict[str, Any]) -> None:
        """The same completion as server-sent events: one delta with the message, one with usage, [DONE]."""
        choice = completion["choices"][0]
        delta = {key: value for key, value in choice["message"].items() if value is not None}
        for call_index, call in enumerate(delta.get("tool_calls") or ()):
            call["index"] = call_index
        head = {key: completion[key] for key in ("id", "created", "model", "system_fingerprint")}
        chunks = [
            {
                **head,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            },
            {
                **head,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
            },
            {**head, "object": "chat.completion.chunk", "choices": [], "usage": completion["usage"]},
        ]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, format: str, *args: Any) -> None:
        return


class FakeOpenAIChat(LoopbackHTTPServer):
    """Context manager running the fake server in a daemon thread on 127.0.0.1, port 0."""

    def __init__(self) -> None:
        super().__init__(_Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"
