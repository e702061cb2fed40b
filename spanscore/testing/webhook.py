"""A webhook endpoint on loopback that keeps every body it gets: alert notifications, for tests and benches."""

from __future__ import annotations

from typing import Any

from aiohttp import web


class Receiver:
    """A webhook endpoint that records every body and fails the first ``fail_first`` requests with 500."""

    def __init__(self, fail_first: int = 0) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.attempts = 0
        self._fail_first = fail_first
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/{path:.*}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/hook"

    async def _handle(self, request: web.Request) -> web.Response:
        self.attempts += 1
        if self.attempts <= self._fail_first:
            return web.Response(status=500)
        self.bodies.append(await request.json())
        return web.Response(status=202)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
