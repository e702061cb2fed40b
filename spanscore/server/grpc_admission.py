"""What an OTLP/gRPC export may cost before and while it is read: the token first, then one of a few read slots.

grpcio reads a unary call's whole message before its handler runs, so a token checked in the handler came
after the cost: eight concurrent unauthenticated 48 MiB exports were all refused, yet grew the service by about
700 MB. The receiver therefore registers Export as a *request-streaming* method (the wire format is the same;
the client still sends one message): the handler runs when the call's headers arrive, checks the token, and
only then asks grpcio for the message. An unauthenticated call ends before any of it is read; what the
connection's flow-control window already carried is all it costs.

Authenticated calls are received and decoded at most ``collector.grpc.max_concurrent_reads`` at a time: each
holds its message twice (grpcio's buffer, then Python bytes) and its decoded rows, so that count times
``max_message_bytes`` bounds the memory exports take. A call waits for a slot without reading anything; one
that cannot get a slot in ``SLOT_WAIT_S`` is answered UNAVAILABLE with a retry hint, and a message that takes
longer than ``READ_TIMEOUT_S`` to arrive gives its slot up (a client trickling bytes holds no slot for long).
The slot is given back once the request is decoded, before storage is waited for.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc

from spanscore.errors import PermanentError, RetryableError

SLOT_WAIT_S = 30.0
"""Longest a call waits for a read slot before it is told to retry (less when its deadline comes sooner)."""
READ_TIMEOUT_S = 60.0
"""Longest a message may take to arrive once its call holds a read slot."""


class ReadSlots:
    """At most ``count`` exports being read or decoded at once, on the gRPC receiver's own event loop."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._free: asyncio.Semaphore | None = None

    @asynccontextmanager
    async def slot(self, deadline_s: float | None = None) -> AsyncIterator[Callable[[], None]]:
        """Hold a slot; yields a thread-safe ``release`` to give it back early (after decoding).

        ``deadline_s`` is the time the call has left, if the client set a deadline.
        """
        if self._free is None:
            self._free = asyncio.Semaphore(self.count)
        free, loop = self._free, asyncio.get_running_loop()
        wait_s = SLOT_WAIT_S if deadline_s is None else max(0.0, min(SLOT_WAIT_S, deadline_s))
        try:
            await asyncio.wait_for(free.acquire(), wait_s)
        except TimeoutError:
            raise RetryableError(
                f"the OTLP/gRPC receiver is already reading {self.count} exports "
                "(collector.grpc.max_concurrent_reads); retry shortly",
                retry_after=1.0,
            ) from None
        lock, released = threading.Lock(), [False]

        def release() -> None:
            with lock:
                if released[0]:
                    return
                released[0] = True
            loop.call_soon_threadsafe(free.release)

        try:
            yield release
        finally:
            release()


async def read_message(context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    """The one message of a unary export, read now (after the token check), within ``READ_TIMEOUT_S``."""
    try:
        message = await asyncio.wait_for(context.read(), READ_TIMEOUT_S)
    except TimeoutError:
        raise PermanentError(f"the export message did not arrive within {READ_TIMEOUT_S:g} s") from None
    if message is grpc.aio.EOF or not isinstance(message, bytes):
        raise PermanentError("the call ended without an export message")
    return message
