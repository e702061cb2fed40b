"""At most a few exports read and decoded at once, per receiver: what bounds the memory ingest can take.

An export holds its body about twice while it is read (the pieces, then the joined bytes, or grpcio's buffer
and Python's copy) and then its decoded rows. A cap on the bytes of one request bounds one of them; only a
cap on how many are read at once bounds them all. A request waits for a slot before reading anything (after
its token is checked), gives the slot back as soon as it is decoded (before storage is waited for, so an
acknowledgement that waits for an insert does not hold a slot), and is told to retry when no slot frees up
within ``SLOT_WAIT_S``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from spanscore.errors import RetryableError

SLOT_WAIT_S = 30.0
"""Longest a request waits for a read slot before it is told to retry (less when its deadline comes sooner)."""
READ_TIMEOUT_S = 60.0
"""Longest a request's body may take to arrive once it holds a read slot (a client trickling bytes holds none
for long)."""


class ReadSlots:
    """At most ``count`` exports being read or decoded at once, on one receiver's event loop.

    ``receiver`` and ``key`` name the receiver and its setting in the retry message.
    """

    def __init__(
        self, count: int, receiver: str = "OTLP/gRPC", key: str = "collector.grpc.max_concurrent_reads"
    ) -> None:
        self.count = count
        self._receiver = receiver
        self._key = key
        self._free: asyncio.Semaphore | None = None

    @asynccontextmanager
    async def slot(self, deadline_s: float | None = None) -> AsyncIterator[Callable[[], None]]:
        """Hold a slot; yields a thread-safe ``release`` to give it back early (after decoding).

        ``deadline_s`` is the time the request has left, if the client set a deadline.
        """
        if self._free is None:
            self._free = asyncio.Semaphore(self.count)
        free, loop = self._free, asyncio.get_running_loop()
        wait_s = SLOT_WAIT_S if deadline_s is None else max(0.0, min(SLOT_WAIT_S, deadline_s))
        try:
            await asyncio.wait_for(free.acquire(), wait_s)
        except TimeoutError:
            raise RetryableError(
                f"the {self._receiver} receiver is already reading {self.count} exports ({self._key}); retry shortly",
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
