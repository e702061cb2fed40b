"""A scriptable OpenAI-compatible chat server on loopback, for judge tests and benchmarks.

Tests start it in-process (``async with FakeJudgeServer() as server``) and point
litellm at ``server.base_url``; litellm then talks real HTTP to it. Each reply is
taken from a per-model script (first in, first out) or, when the script is empty,
from the model's default reply. A reply can be a JSON verdict (sent as message
content or as tool-call arguments, whichever the request asked for), raw text
(prose around JSON, malformed JSON, nothing), an HTTP error status, or any of
these after a delay.

An outage can be switched on for a while (``fail_for(seconds, replies)``):
until it ends every request is answered with the given error replies in turn,
whatever the scripts hold. ``answers`` logs when each request was answered,
with which status and ``Retry-After``, for checks on retry timing.

Models can also be limited: a model without ``json_schema`` support answers a
request carrying ``response_format: json_schema`` with a 400, the way many
OpenAI-compatible servers do, without consuming its script.

Run standalone for benchmarks::

    python tests/fakes/fake_openai.py --port 0 --latency-ms 200

prints ``listening on http://127.0.0.1:PORT/v1`` once ready.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build with the class methods rather than by hand."""

    status: int = 200
    verdict: Any = None
    text: str | None = None
    delay_s: float = 0.0
    finish_reason: str = "stop"
    retry_after: str | None = None
    input_tokens: int = 50
    output_tokens: int = 20
    retry_delay: str | None = None
    """A delay carried in the error body (Gemini's ``RetryInfo.retryDelay``, e.g. ``"2s"``); fake_providers."""

    @classmethod
    def json(cls, verdict: Any, *, delay_s: float = 0.0) -> Reply:
        """A well-formed answer: content (or tool arguments) is ``json.dumps(verdict)``."""
        return cls(verdict=verdict, delay_s=delay_s)

    @classmethod
    def raw(cls, text: str, *, finish_reason: str = "stop", delay_s: float = 0.0) -> Reply:
        """Content exactly as given: prose, malformed JSON, an empty string."""
        return cls(text=text, finish_reason=finish_reason, delay_s=delay_s)

    @classmethod
    def error(
        cls, status: int, *, retry_after: str | None = None, delay_s: float = 0.0, retry_delay: str | None = None
    ) -> Reply:
        """An HTTP error with an OpenAI-style error body (or the provider's own, in fake_providers)."""
        return cls(status=status, retry_after=retry_after, delay_s=delay_s, retry_delay=retry_delay)


@dataclass(frozen=True)
class Answer:
    """One answered request: when (monotonic), for which model, with which status and hint, to which prompt."""

    at: float
    model: str
    status: int
    retry_after: str | None
    prompt: str


def _prompt_of(body: dict[str, Any]) -> str:
    messages = [m for m in body.get("messages") or () if isinstance(m, dict) and m.get("role") == "user"]
    return str(messages[0].get("content", "")) if messages else ""


@dataclass
class ModelProfile:
    """What a fake model accepts; unsupported request features get a 400."""

    json_schema: bool = True
    json_object: bool = True
    tools: bool = True
    default: Reply | None = None


@dataclass
class FakeJudgeServer:
    """The server plus its scripts and a log of the requests it received."""

    latency_s: float = 0.0
    profiles: dict[str, ModelProfile] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    record_requests: bool = True
    default_reply: Reply = field(default_factory=lambda: Reply.json({"ok": True}))
    _scripts: dict[str, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    _runner: web.AppRunner | None = None
    port: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    answers: list[Answer] = field(default_factory=list)
    _outage_until: float = 0.0
    _outage_replies: list[Reply] = field(default_factory=list)
    _outage_count: int = 0

    def fail_for(self, seconds: float, *replies: Reply) -> None:
        """Answer every request with ``replies`` (in turn) for the next ``seconds``, then recover."""
        self._outage_replies = list(replies)
        self._outage_count = 0
        self._outage_until = time.monotonic() + seconds

    @property
    def failing(self) -> bool:
        return time.monotonic() < self._outage_until

    def script(self, model: str, *replies: Reply) -> None:
        """Queue replies for ``model`` (the name after the provider prefix)."""
        self._scripts[model].extend(replies)

    def pending(self, model: str) -> int:
        return len(self._scripts[model])

    def requests_for(self, model: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("model") == model]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self, port: int = 0) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeJudgeServer:
        await self.start(self.port)  # a port given up front: a judge coming back on the address it had
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        if self.record_requests:
            self.requests.append(body)
        model = str(body.get("model", ""))
        profile = self.profiles.get(model, ModelProfile())
        refusal = _unsupported_feature(body, profile)
        if refusal is not None:
            return _error_response(400, refusal, "invalid_request_error")
        script = self._scripts.get(model)
        if self.failing and self._outage_replies:
            reply = self._outage_replies[self._outage_count % len(self._outage_replies)]
            self._outage_count += 1
        else:
            reply = script.popleft() if script else (profile.default or self.default_reply)
        delay = self.latency_s + reply.delay_s
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if delay:
                await asyncio.sleep(delay)
        finally:
            self.in_flight -= 1
        if self.record_requests:
            self.answers.append(Answer(time.monotonic(), model, reply.status, reply.retry_after, _prompt_of(body)))
        if reply.status != 200:
            headers = {"Retry-After": reply.retry_after} if reply.retry_after else {}
            return _error_response(reply.status, f"scripted status {reply.status}", "server_error", headers)
        return web.json_response(_completion(body, reply))


def _unsupported_feature(body: dict[str, Any], profile: ModelProfile) -> str | None:
    response_format = body.get("response_format") or {}
    kind = response_format.get("type")
    if kind == "json_schema" and not profile.json_schema:
        return "response_format of type json_schema is not supported by this model"
    if kind == "json_object" and not profile.json_object:
        return "response_format of type json_object is not supported by this model"
    if body.get("tools") and not profile.tools:
        return "this model does not support tools"
    return None


def _error_response(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> web.Response:
    payload = {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}
    return web.json_response(payload, status=status, headers=headers)


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    content = reply.text if reply.text is not None else json.dumps(reply.verdict)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    finish_reason = reply.finish_reason
    tools = body.get("tools")
    if tools and reply.text is None:
        name = tools[0]["function"]["name"]
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": name, "arguments": content}},
            ],
        }
        finish_reason = "tool_calls"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    }


async def _serve(port: int, latency_ms: float, reply: str) -> None:
    server = FakeJudgeServer(latency_s=latency_ms / 1000, record_requests=False)
    server.default_reply = Reply.json(json.loads(reply))
    await server.start(port)
    print(f"listening on {server.base_url}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible judge on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="port to bind on 127.0.0.1 (0 picks a free one)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="delay before every answer")
    parser.add_argument(
        "--reply",
        default='{"verdicts": [{"verdict": "yes", "reason": "supported"}]}',
        help="JSON every request is answered with",
    )
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args.port, args.latency_ms, args.reply))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
