"""Loopback judges that speak the Anthropic Messages API, Gemini generateContent and Ollama's API.

Like ``fake_openai`` (whose ``Reply`` scripts they reuse), each is an aiohttp
server on 127.0.0.1, port 0, and litellm talks real HTTP to it: the requests
are the ones litellm builds for the real provider, so a test sees the mode
and parameters litellm actually sent (``requests``), not the ones spanscore
asked for. Replies come from a per-model script, first in, first out:

* a JSON verdict goes back the way the request asked for it: as the forced
  tool's input (Anthropic ``tool_use``, Gemini ``functionCall``, Ollama
  ``tool_calls``) when the request forced a tool, else as text;
* an error status goes back in the provider's own error shape, with
  ``Retry-After`` when scripted, and, for Gemini, the delay as
  ``google.rpc.RetryInfo`` in the body (``Reply.retry_delay``) the way
  Gemini sends it, without a header.

The server runs on its own thread and event loop, never the test's: after
an Ollama call litellm looks the model up with a *synchronous* POST to
``/api/show`` on the same host, from the caller's event loop, which would
deadlock a server sharing that loop (a real Ollama is another process).

Every request is logged with its path, so a test can assert where litellm
sent it (``/v1/messages``, ``/v1beta/models/<m>:generateContent``,
``/api/generate``, ``/api/chat``); unknown paths answer 404 and are logged too.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.fake_openai import Reply

PROVIDERS = ("anthropic", "gemini", "ollama")


@dataclass(frozen=True)
class Seen:
    """One request as received: path, headers, JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeProviderServer:
    """One provider's wire format on loopback; ``kind`` is ``anthropic``, ``gemini`` or ``ollama``."""

    kind: str
    requests: list[Seen] = field(default_factory=list)
    default_reply: Reply = field(default_factory=lambda: Reply.json({"ok": True}))
    _scripts: dict[str, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    _runner: web.AppRunner | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    port: int = 0

    def script(self, model: str, *replies: Reply) -> None:
        self._scripts[model].extend(replies)

    def pending(self, model: str) -> int:
        return len(self._scripts[model])

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        """The ``api_base`` litellm wants for this provider (docs/judge.md's table)."""
        return f"{self.root}/v1beta" if self.kind == "gemini" else self.root

    async def __aenter__(self) -> FakeProviderServer:
        if self.kind not in PROVIDERS:
            raise ValueError(f"unknown provider {self.kind!r}; one of {PROVIDERS}")
        started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self._thread.start()
        await asyncio.to_thread(started.wait, 10)
        if not self.port:
            raise RuntimeError("the fake provider did not start")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            await asyncio.to_thread(self._thread.join, 10)

    def _run(self, started: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        loop.run_until_complete(self._start())
        started.set()
        try:
            loop.run_forever()
        finally:
            assert self._runner is not None
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        assert site._server is not None
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_raw": raw.decode(errors="replace")}
        self.requests.append(Seen(request.path, dict(request.headers), body))
        model = self._model_of(request.path, body)
        if model is None:
            return web.json_response({"error": f"no route {request.path}"}, status=404)
        if request.path == "/api/show":  # litellm's model lookup after a call: no context length, no tools
            return web.json_response({"template": "{{ .Prompt }}", "model_info": {}})
        script = self._scripts.get(model)
        reply = script.popleft() if script else self.default_reply
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            return self._error(reply)
        content = reply.text if reply.text is not None else json.dumps(reply.verdict)
        return web.json_response(getattr(self, f"_{self.kind}")(body, reply, content, model))

    def _model_of(self, path: str, body: dict[str, Any]) -> str | None:
        if self.kind == "anthropic" and path == "/v1/messages":
            return str(body.get("model", ""))
        if self.kind == "gemini" and path.startswith("/v1beta/models/") and path.endswith(":generateContent"):
            return path.removeprefix("/v1beta/models/").removesuffix(":generateContent")
        if self.kind == "ollama" and path in ("/api/generate", "/api/chat", "/api/show"):
            return str(body.get("model", ""))
        return None

    def _error(self, reply: Reply) -> web.Response:
        headers = {"Retry-After": reply.retry_after} if reply.retry_after else {}
        message = f"scripted status {reply.status}"
        if self.kind == "anthropic":
            kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(reply.status, "api_error")
            payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        elif self.kind == "gemini":
            details = []
            if reply.retry_delay:
                details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": reply.retry_delay})
            payload = {"error": {"code": reply.status, "message": message, "status": "UNAVAILABLE", "details": details}}
        else:
            payload = {"error": message}
        return web.json_response(payload, status=reply.status, headers=headers)

    @staticmethod
    def _anthropic(body: dict[str, Any], reply: Reply, content: str, model: str) -> dict[str, Any]:
        forced = (body.get("tool_choice") or {}).get("name")
        if forced and reply.text is None:
            blocks = [{"type": "tool_use", "id": "toolu_1", "name": forced, "input": reply.verdict}]
            stop = "tool_use"
        else:
            blocks = [{"type": "text", "text": content}]
            stop = "max_tokens" if reply.finish_reason == "length" else "end_turn"
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
        }

    @staticmethod
    def _gemini(body: dict[str, Any], reply: Reply, content: str, model: str) -> dict[str, Any]:
        allowed = (((body.get("toolConfig") or {}).get("functionCallingConfig")) or {}).get("allowedFunctionNames")
        part: dict[str, Any] = {"text": content}
        if allowed and reply.text is None:
            part = {"functionCall": {"name": allowed[0], "args": reply.verdict}}
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [part]},
                    "finishReason": "MAX_TOKENS" if reply.finish_reason == "length" else "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": reply.input_tokens,
                "candidatesTokenCount": reply.output_tokens,
                "totalTokenCount": reply.input_tokens + reply.output_tokens,
            },
            "modelVersion": model,
        }

    @staticmethod
    def _ollama(body: dict[str, Any], reply: Reply, content: str, model: str) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "model": model,
            "created_at": "2026-01-01T00:00:00Z",
            "done": True,
            "done_reason": "length" if reply.finish_reason == "length" else "stop",
            "prompt_eval_count": reply.input_tokens,
            "eval_count": reply.output_tokens,
        }
        if "messages" in body:
            message: dict[str, Any] = {"role": "assistant", "content": content}
            tools = body.get("tools")
            if tools and reply.text is None:
                name = tools[0]["function"]["name"]
                message = {"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"name": name, "arguments": reply.verdict}}
                ]}  # fmt: skip
            answer["message"] = message
        else:
            answer["response"] = content
        return answer
