"""A handler's work is cancelled when its HTTP client disconnects (aiohttp does not do it by itself)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web

from spanscore.server.client_gone import while_connected

HANG_GUARD_S = 30


@asynccontextmanager
async def serving(work: Callable[[], Awaitable[bytes]]) -> AsyncIterator[int]:
    """A real aiohttp server on loopback whose one handler answers ``work()`` under ``while_connected``."""

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=await while_connected(request, work()))

    app = web.Application()
    app.router.add_get("/q", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def test_work_is_cancelled_when_the_client_goes_away() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def endless() -> bytes:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return b""

    async with serving(endless) as port:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /q HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        await asyncio.wait_for(started.wait(), HANG_GUARD_S)
        assert not cancelled.is_set()
        writer.transport.abort()  # the client goes away without an answer
        await asyncio.wait_for(cancelled.wait(), HANG_GUARD_S)


async def test_work_that_finishes_is_answered() -> None:
    async def quick() -> bytes:
        return b"done"

    async with serving(quick) as port:
        with socket.create_connection(("127.0.0.1", port)) as client:
            client.sendall(b"GET /q HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            answer = await asyncio.to_thread(client.recv, 4096)
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"done")
