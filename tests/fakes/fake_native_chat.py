"""The weather conversation of ``fake_openai_chat`` in two native wire formats: Gemini and Anthropic.

For recording the Google GenAI SDK and the Anthropic SDK with their own instrumentations (#29): the
SDKs speak their provider's API, not OpenAI's, so the recorder points them here instead. The script is
``fake_openai_chat``'s: no tool result yet, so ask for ``get_weather`` for the city the latest user
message names (call id ``call_weather_N`` for the N-th question); after a tool result, answer.

* ``POST /v1beta/models/MODEL:generateContent``: Gemini ``contents`` with ``functionCall`` /
  ``functionResponse`` parts, ``usageMetadata``;
* ``POST /v1/messages``: Anthropic ``messages`` with ``tool_use`` / ``tool_result`` blocks, ``usage``.

Streaming is not served (the recorders do not ask for it); any other path answers 404. Bind port 0, read ``url``.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.fake_openai_chat import FINAL_ANSWER, SECOND_CITY, TOOL_ARGUMENTS
from tests.fakes.loopback import LoopbackHTTPServer

GEMINI_MODEL = "gemini-2.5-flash"
ANTHROPIC_MODEL = "claude-sonnet-4-5"
USAGE = {"call": (40, 8), "answer": (60, 12)}
"""Tokens (in, out) of the tool-call step and of the answer step, as in the OpenAI fake."""


def _step(questions: list[str], answered_tool: bool) -> tuple[str, str, str]:
    """(kind, city, call id) of the next step: ``call`` the weather tool, or ``answer``."""
    city = SECOND_CITY if questions and SECOND_CITY in questions[-1] else TOOL_ARGUMENTS["city"]
    return ("answer" if answered_tool else "call"), city, f"call_weather_{max(len(questions), 1)}"


def gemini_reply(request: dict[str, Any], model: str) -> dict[str, Any]:
    """A generateContent response for ``request`` (``contents``: user / model turns of parts)."""
    contents = request.get("contents") or []
    questions = [
        part["text"]
        for content in contents
        if content.get("role", "user") == "user"
        for part in content.get("parts") or ()
        if "text" in part
    ]
    last_parts = (contents[-1].get("parts") or []) if contents else []
    kind, city, call_id = _step(questions, any("functionResponse" in part for part in last_parts))
    if kind == "answer":
        part: dict[str, Any] = {"text": FINAL_ANSWER.replace("Paris", city)}
    else:
        part = {"functionCall": {"id": call_id, "name": "get_weather", "args": {"city": city}}}
    prompt, completion = USAGE[kind]
    return {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": completion,
            "totalTokenCount": prompt + completion,
        },
        "modelVersion": model,
        "responseId": f"resp-{len(contents)}",
    }


def anthropic_reply(request: dict[str, Any]) -> dict[str, Any]:
    """A Messages API response for ``request`` (``messages`` whose content is text or blocks)."""
    messages = request.get("messages") or []

    def blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
        content = message.get("content")
        return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())

    questions = [
        block["text"]
        for message in messages
        if message.get("role") == "user"
        for block in blocks(message)
        if block.get("type") == "text"
    ]
    answered = bool(messages) and any(block.get("type") == "tool_result" for block in blocks(messages[-1]))
    kind, city, call_id = _step(questions, answered)
    if kind == "answer":
        block: dict[str, Any] = {"type": "text", "text": FINAL_ANSWER.replace("Paris", city)}
    else:
        block = {"type": "tool_use", "id": call_id, "name": "get_weather", "input": {"city": city}}
    prompt, completion = USAGE[kind]
    return {
        "id": f"msg_{len(messages)}",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", ANTHROPIC_MODEL),
        "content": [block],
        "stop_reason": "end_turn" if kind == "answer" else "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?", 1)[0]
        if path.endswith(":generateContent"):
            reply = gemini_reply(body, path.rsplit("/", 1)[-1].split(":", 1)[0])
        elif path.rstrip("/").endswith("/v1/messages"):
            reply = anthropic_reply(body)
        else:
            self.send_error(404)
            return
        payload = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return


class FakeNativeChat(LoopbackHTTPServer):
    """Gemini and Anthropic on one loopback server (127.0.0.1, port 0), in a daemon thread."""

    def __init__(self) -> None:
        super().__init__(_Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
