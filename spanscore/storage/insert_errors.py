"""Which insert failures to retry and which are the data's fault: the write path's one classifier.

Retrying a block the engine will never take stops everything queued behind it, and
giving up on one it would take later loses data, so the choice comes from the engine's
own error code. Codes that say the data itself is wrong (a value that does not parse or
convert, a constraint, a block spread over more partitions than one insert may touch)
become ``InsertDataError``; the write path then splits the batch, stores what it can and
dead-letters the rest. Everything else (the server is away, a timeout, memory, too many
parts, an unknown code) stays retryable: when unsure, keep the rows and try again, and let
``/healthz`` say that the writer is stuck.
"""

from __future__ import annotations

import re

from spanscore.errors import PermanentError, RetryableError

# ClickHouse error codes (src/Common/ErrorCodes.cpp) that a retry of the same block can never fix.
DATA_ERROR_CODES = frozenset(
    {
        6,  # CANNOT_PARSE_TEXT
        16,  # NO_SUCH_COLUMN_IN_TABLE
        26,  # CANNOT_PARSE_QUOTED_STRING
        27,  # CANNOT_PARSE_INPUT_ASSERTION_FAILED
        32,  # ATTEMPT_TO_READ_AFTER_EOF
        33,  # CANNOT_READ_ALL_DATA
        38,  # CANNOT_PARSE_DATE
        41,  # CANNOT_PARSE_DATETIME
        43,  # ILLEGAL_TYPE_OF_ARGUMENT
        53,  # TYPE_MISMATCH
        69,  # ARGUMENT_OUT_OF_BOUND
        70,  # CANNOT_CONVERT_TYPE
        72,  # CANNOT_PARSE_NUMBER
        117,  # INCORRECT_DATA
        130,  # CANNOT_READ_ARRAY_FROM_TEXT
        131,  # TOO_LARGE_STRING_SIZE
        349,  # CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
        395,  # FUNCTION_THROW_IF_VALUE_IS_NON_ZERO
        469,  # VIOLATED_CONSTRAINT
    }
)
TOO_MANY_PARTS = 252
# TOO_MANY_PARTS (252) is also the code of "Too many partitions for single INSERT block": the first is
# the engine asking to slow down (retry), the second is the block's shape (split it), so the text decides.
_TOO_MANY_PARTITIONS = re.compile(r"too many partitions for single insert block", re.IGNORECASE)
_CODE = re.compile(r"Code: (\d+)\.")


class InsertDataError(PermanentError):
    """The engine refuses this block for what it holds; the same block will fail every time."""

    def __init__(self, message: str, *, code: int | None = None, partitions: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.partitions = partitions
        """True when the block spans too many partitions: split by partition, no single row is at fault."""


def engine_code(message: str) -> int | None:
    """The ``Code: N.`` the engine put at the start of its message, if any."""
    found = _CODE.search(message)
    return int(found.group(1)) if found else None


def classify_engine_error(table: str, exc: BaseException) -> RetryableError | InsertDataError:
    """The error to raise for one failed insert into ``table``, with the engine's one-line reason."""
    message = _one_line(str(exc))
    code = engine_code(message)
    if code == TOO_MANY_PARTS and _TOO_MANY_PARTITIONS.search(message):
        return InsertDataError(f"storage refused the insert into {table}: {message}", code=code, partitions=True)
    if code in DATA_ERROR_CODES:
        return InsertDataError(f"storage refused the insert into {table}: {message}", code=code)
    return RetryableError(f"storage rejected the insert into {table}: {message}", retry_after=2.0)


def encoding_error(table: str, exc: BaseException) -> InsertDataError:
    """A row the driver could not even encode (wrong Python type, out-of-range value)."""
    return InsertDataError(f"rows for {table} could not be encoded: {type(exc).__name__}: {_one_line(str(exc))}")


def _one_line(message: str) -> str:
    for line in message.splitlines():
        if "Code:" in line or "DB::Exception" in line:
            return line.strip()[:2000]
    stripped = message.strip()
    return stripped.splitlines()[0][:2000] if stripped else "no reason given"
