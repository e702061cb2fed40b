"""Blocking Keeper calls run from the event loop, in a thread that never holds a shutdown back.

kazoo's synchronous calls wait for Keeper's answer without a deadline of their own; a call sent into a
partition, or one in flight when its client was restarted and then stopped, may never be answered. Run in the
loop's default executor, such a call made the loop's shutdown wait for it: a replica restarted mid-partition
hung on SIGTERM in a CI run (kazoo's DataWatch, waiting on its first read). Here each call gets a daemon
thread of its own: the awaiting task can be cancelled, and a call that never returns ends with the process.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def keeper_call(call: Callable[[], T], name: str = "fleet-keeper-call") -> T:
    """``call()`` in a daemon thread, awaited; cancelling the await leaves the thread to finish (or not)."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if answer.done():
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            result, error = call(), None
        except BaseException as exc:  # handed to the awaiting task
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop closed meanwhile: nobody waits any more
            pass

    threading.Thread(target=run, name=name, daemon=True).start()
    return await answer
