"""A Keeper call that never returns must not hold the event loop's shutdown (a replica's SIGTERM) back."""

from __future__ import annotations

import asyncio
import threading

import pytest

from spanscore.fleet.keeper_thread import keeper_call


def test_a_call_that_never_returns_does_not_hold_the_loop_shutdown() -> None:
    """In the loop's default executor (asyncio.to_thread) the same call makes asyncio.run wait for ever."""
    never = threading.Event()

    async def main() -> None:
        task = asyncio.create_task(keeper_call(never.wait))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(main())
    finally:
        never.set()


async def test_the_answer_or_the_error_comes_back() -> None:
    assert await keeper_call(lambda: 41 + 1) == 42
    with pytest.raises(KeyError, match="gone"):
        await keeper_call(lambda: {}["gone"])
