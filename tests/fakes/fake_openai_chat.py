"""A tiny OpenAI-compatible chat completions server on loopback, for recording real instrumentation spans.

The conversation is scripted: when the last message is not a tool result the model asks for
``get_weather`` for the city the latest user message names (Paris unless it names Rome), with the
call id ``call_weather_N`` for the N-th user message; after a tool result it answers with the final
text. A conversation that goes on (a second user turn) so gets a second tool call and answer, the
way an agent framework's multi-turn session would.
Only non-streaming ``POST /v1/chat/completions`` is served. Bind port 0 and read ``url``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "gpt-4o-mini"
TOOL_CALL_ID = "call_weather_1"
TOOL_ARGUMENTS = {"city": "Paris"}
FINAL_ANSWER = "It is sunny and 22 C in Paris."
SECOND_CITY = "Rome"


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _completion(request: dict[str, Any]) -> dict[str, Any]:
    messages = request.get("messages") or []
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    city = SECOND_CITY if users and SECOND_CITY in users[-1] else TOOL_ARGUMENTS["city"]
    if messages and messages[-1].get("role") == "tool":
        message: dict[str, Any] = {"role": "assistant", "content": FINAL_ANSWER.replace("Paris", city)}
        finish, usage = "stop", (60, 12)
    else:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": TOOL_CALL_ID if len(users) <= 1 else f"call_weather_{len(users)}",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
                }
            ],
        }
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
        payload = json.dumps(_completion(body)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return


class FakeOpenAIChat:
    """Context manager running the fake server in a daemon thread on 127.0.0.1, port 0."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeOpenAIChat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
