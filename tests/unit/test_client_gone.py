"""A handler's work is cancelled when its HTTP client disconnects (aiohttp does not do it by itself)."""

from __future__ import annotations

import asyncio
import socket

from aiohttp import web

from spanscore.client_gone import while_connected

HANG_GUARD_S = 30


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

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=await while_connected(request, endless()))

    app = web.Application()
    app.router.add_get("/q", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /q HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        await asyncio.wait_for(started.wait(), HANG_GUARD_S)
        assert not cancelled.is_set()
        writer.transport.abort()  # the client goes away without an answer
        await asyncio.wait_for(cancelled.wait(), HANG_GUARD_S)
    finally:
        await runner.cleanup()


async def test_work_that_finishes_is_answered() -> None:
    async def quick() -> bytes:
        return b"done"

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=await while_connected(request, quick()))

    app = web.Application()
    app.router.add_get("/q", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        with socket.create_connection(("127.0.0.1", port)) as client:
            client.sendall(b"GET /q HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            answer = await asyncio.to_thread(client.recv, 4096)
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"done")
    finally:
        await runner.cleanup()
