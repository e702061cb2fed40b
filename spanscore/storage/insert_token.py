"""The deduplication token an insert carries, so a batch retried after a crash is stored once.

ClickHouse drops an insert whose ``insert_deduplication_token`` it has already taken (within
each table's window: ``non_replicated_deduplication_window`` on the embedded engine, migration
0013; the Replicated engines' own window on a cluster). The write path gives every batch a random
token when the batch is first written, keeps it with the batch in the spool, and sends it with
every attempt: whichever attempt landed first, the others change nothing.

The token travels in a context variable rather than as an argument, so the write path's one insert
signature (``InsertFn``: records in, nothing out) stays as it is for every store method and every
test double; the store reads it when it builds an insert's settings. It is set only around the
insert of a whole batch (``Inserter.store``): the pieces of a refused batch are different blocks
and must not share it.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
import secrets
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from typing import Any, TypeVar

R = TypeVar("R")

TOKEN_PATTERN = "[0-9a-f]{32}"
_TOKEN = re.compile(rf"^{TOKEN_PATTERN}$")
_CURRENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("spanscore_insert_token", default=None)


BY_CONTENT = "0" * 32
"""The token of a batch deduplicated by its content: its inserts carry no token, so the engine compares the
block's hash. A live insert uses it, so that an exporter's retry of the very same export (a lost
acknowledgement) is dropped as before; a batch spooled after such an insert failed keeps it, and its replay
goes alone, as the same block, so an insert that landed anyway is dropped too."""


def new_token() -> str:
    """128 random bits: unique forever, unlike a spool file's number, which starts again at 1."""
    while (token := secrets.token_hex(16)) == BY_CONTENT:
        pass
    return token


def check_token(token: str) -> str:
    """``token`` if it has the form ``new_token`` makes; a ValueError naming it otherwise."""
    if not _TOKEN.match(token):
        raise ValueError(f"an insert deduplication token is 32 lowercase hex digits, got {token!r}")
    return token


@contextmanager
def insert_token(token: str | None) -> Iterator[None]:
    """Inserts made inside carry ``token`` (None: none, the engine then compares the rows' hash)."""
    reset = _CURRENT.set(None if token is None else check_token(token))
    try:
        yield
    finally:
        _CURRENT.reset(reset)


def token_settings() -> dict[str, Any]:
    """The insert settings the current token asks for (empty without one)."""
    token = _CURRENT.get()
    return {} if token is None or token == BY_CONTENT else {"insert_deduplication_token": token}


async def run_with_token(executor: Executor, call: Callable[..., R], *args: Any) -> R:
    """``call(*args)`` on ``executor``, seeing the caller's token (an executor thread has no context of its own)."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(executor, context.run, call, *args)
