"""Engine errors on a guarded read: the query's fault is a 400 that names the limit, a busy engine a 503 with a hint."""

from __future__ import annotations

import pytest

from spanscore.errors import PermanentError, RetryableError
from spanscore.server.wire import classify, http_headers
from spanscore.storage.query.engine_errors import BUSY_RETRY_AFTER_S, query_failure
from spanscore.storage.query.guard import QueryLimits

LIMITS = QueryLimits()


@pytest.mark.parametrize(
    "message",
    [
        "Code: 439. DB::Exception: Cannot schedule a task: no free thread (timeout=0) (threads=10000, jobs=10000). "
        "(CANNOT_SCHEDULE_TASK)",
        "Code: 202. DB::Exception: Too many simultaneous queries. Maximum: 100. (TOO_MANY_SIMULTANEOUS_QUERIES)",
        "Code: 241. DB::Exception: Memory limit (total) exceeded: would use 21.60 GiB (attempt to allocate chunk of "
        "4194304 bytes), maximum: 21.60 GiB. (MEMORY_LIMIT_EXCEEDED)",
        'Code: 473. DB::Exception: READ locking attempt on "spanscore.otel_traces" has timed out! (120000ms). '
        "Possible deadlock avoided. (DEADLOCK_AVOIDED)",
    ],
)
def test_a_busy_engine_is_a_503_with_a_retry_hint(message: str) -> None:
    error = query_failure(message, LIMITS)
    assert isinstance(error, RetryableError) and error.retry_after == BUSY_RETRY_AFTER_S
    wire = classify(error)
    assert wire.http_status == 503 and http_headers(wire) == {"Retry-After": "2"}
    assert "busy" in wire.message and message in wire.message


@pytest.mark.parametrize(
    ("message", "names"),
    [
        ("Code: 159. DB::Exception: Timeout exceeded: elapsed 10.0 seconds, maximum: 10. (TIMEOUT_EXCEEDED)",
         "storage.query_max_execution_time_s"),
        ("Code: 241. DB::Exception: Memory limit (for query) exceeded: would use 1.00 GiB. (MEMORY_LIMIT_EXCEEDED)",
         "storage.query_max_memory_bytes"),
        ("Code: 396. DB::Exception: Limit for result exceeded, max rows: 100.00 thousand. (TOO_MANY_ROWS_OR_BYTES)",
         "storage.query_max_result_rows"),
        ("Code: 62. DB::Exception: Syntax error: failed at position 8. (SYNTAX_ERROR)", "Syntax error"),
    ],
)  # fmt: skip
def test_the_querys_own_fault_is_a_400_naming_what_to_change(message: str, names: str) -> None:
    error = query_failure(message, LIMITS)
    assert isinstance(error, PermanentError)
    assert classify(error).http_status == 400 and names in str(error)
