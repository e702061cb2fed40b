"""A tiny OpenAI-compatible chat completions server on loopback, for recording real instrumentation spans.

The conversation is scripted: while the request carries no tool result the model asks for
``get_weather(city="Paris")``; once a tool result is present it answers with the final text.
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


def _completion(request: dict[str, Any]) -> dict[str, Any]:
    messages = request.get("messages") or []
    has_tool_result = any(m.get("role") == "tool" for m in messages)
    if has_tool_result:
        message: dict[str, Any] = {"role": "assistant", "content": FINAL_ANSWER}
        finish, usage = "stop", (60, 12)
    else:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": TOOL_CALL_ID,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps(TOOL_ARGUMENTS)},
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
