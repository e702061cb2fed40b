"""Whether an engine error is the query's fault (400) or the engine being busy (503, try again).

A read that fails because of what it asks (a syntax error, a limit it exceeds on its own) will fail
the same way next time: the caller must change it, so it is a ``PermanentError`` with the limit named.
A read that fails because of what else the engine is doing (no free thread to schedule it on, too many
queries at once, the process-wide memory limit reached by other work, a lock held by a merge or an
insert) would succeed a moment later: answering 400 to it would tell a client its query is wrong when
the service is merely busy. Those become ``RetryableError`` with a retry hint (503 + Retry-After).
"""

from __future__ import annotations

import re

from spanscore.errors import PermanentError, RetryableError
from spanscore.storage.query.guard import QueryLimits, explain_engine_error

BUSY_RETRY_AFTER_S = 2.0
_BUSY_CODES = frozenset(
    {
        "CANNOT_SCHEDULE_TASK",  # the engine's thread pools are full
        "TOO_MANY_SIMULTANEOUS_QUERIES",
        "DEADLOCK_AVOIDED",  # a table lock was not had in time (a merge, an insert, a part swap)
        "TABLE_IS_READ_ONLY",
        "ABORTED",
        "CANNOT_ALLOCATE_MEMORY",
    }
)
_ENGINE_CODE = re.compile(r"\(([A-Z][A-Z_]+)\)")


def query_failure(message: str, limits: QueryLimits) -> PermanentError | RetryableError:
    """The error to raise for the engine's one-line ``message`` about a guarded read."""
    codes = set(_ENGINE_CODE.findall(message))
    busy = bool(codes & _BUSY_CODES) or ("MEMORY_LIMIT_EXCEEDED" in codes and "(total)" in message)
    if busy:
        return RetryableError(
            f"the store is busy, not the query: try again in {BUSY_RETRY_AFTER_S:g} s ({message})",
            retry_after=BUSY_RETRY_AFTER_S,
        )
    return PermanentError(explain_engine_error(message, limits))
