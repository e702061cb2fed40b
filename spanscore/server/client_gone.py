"""Stop work for an HTTP client that has gone away.

aiohttp does not cancel a handler when its client disconnects, so a query whose caller closed the
connection would run on to its time limit and hold a reader meanwhile. ``while_connected`` watches
the request's connection and cancels the work (the store then kills the engine's query).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from aiohttp import web

from spanscore.errors import PermanentError

T = TypeVar("T")


async def while_connected(request: web.Request, work: Awaitable[T], poll_s: float = 0.1) -> T:
    """Await ``work``; cancel it and raise PermanentError if the client disconnects first."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=poll_s)
            if done:
                return task.result()
            transport = request.transport
            if transport is None or transport.is_closing():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise PermanentError("the client went away; its query was cancelled")
    except asyncio.CancelledError:
        task.cancel()
        raise
