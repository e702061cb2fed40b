"""A judge worker process (``python -m spanscore.scorers.judge.worker_main``): litellm calls over stdin/stdout.

Requests arrive as JSON lines from ``WorkerPoolTransport`` in the service; each runs concurrently and is
answered by id, in any order. The worker exits when its stdin closes, so it never outlives the service.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import sys
from dataclasses import asdict
from typing import Any

from spanscore.scorers.judge.resilience import Failure
from spanscore.scorers.judge.transport import CallFailed, call_litellm
from spanscore.scorers.judge.workers import LINE_LIMIT


async def _answer(message: dict[str, Any], out: Any) -> None:
    try:
        reply = await call_litellm(message["kwargs"], structured=message["structured"])
        answer: dict[str, Any] = {"id": message["id"], "ok": True, "reply": asdict(reply)}
    except Exception as exc:  # a failure outside litellm's call still has to answer, or the caller waits
        failed = (
            exc
            if isinstance(exc, CallFailed)
            else CallFailed(
                Failure.PERMANENT,
                f"judge worker: {type(exc).__name__}: {exc}",
                error_type=type(exc).__name__,
                retry_after=None,
            )
        )
        answer = {
            "id": message["id"],
            "ok": False,
            "failure": failed.failure.value,
            "message": str(failed),
            "error_type": failed.error_type,
            "retry_after": failed.retry_after,
        }
    out.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
    out.flush()


class _InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs submitted work at once on the calling thread.

    litellm hands the synchronous half of every ``acompletion`` (parameter mapping, no I/O) to the
    loop's default executor; in a worker whose loop does nothing else, the hop to a thread and the
    GIL hand-offs back cost about 30% of a call's CPU. The price: a blocking DNS lookup (rare:
    aiohttp caches them) stalls this worker's other calls for its duration, never the service.
    """

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting coroutine, as a thread would
            future.set_exception(exc)
        return future


async def _serve() -> None:
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but protocol lines may reach the parent's pipe
    loop = asyncio.get_running_loop()
    loop.set_default_executor(_InlineExecutor(max_workers=1))
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out.write(b'{"ready":true}\n')
    out.flush()
    tasks: set[asyncio.Task[None]] = set()
    while line := await reader.readline():
        task = asyncio.create_task(_answer(json.loads(line), out))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(_serve())
