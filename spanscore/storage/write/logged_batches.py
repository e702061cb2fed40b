"""Batches this process wrote to the write-ahead spool and has not inserted yet, kept in memory.

With ``acknowledge: spooled`` every batch passes through the spool; reading each one
back from disk before its insert would double the work, so the writer keeps them
here until they are inserted, and, when the insert can take the spool codec's bytes
as they are, those bytes too (no second encoding). Both are bounded: past
``max_records`` records or ``max_bytes`` bytes a batch is not kept, and the replay
reads it back from the spool when its turn comes (200,000 LLM-sized spans would
otherwise hold about 2 GB twice over).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


class LoggedBatches(Generic[T]):
    """Spool file -> its records (and optionally its bytes), with the totals the bounds need."""

    def __init__(self, max_records: int, max_bytes: int) -> None:
        self._records: dict[Path, Sequence[T]] = {}
        self._encoded: dict[Path, bytes] = {}
        self._max_records = max_records
        self._max_bytes = max_bytes
        self.count = 0
        """Records kept."""
        self.size = 0
        """Bytes kept."""

    def __len__(self) -> int:
        return len(self._records)

    def keep(self, path: Path, records: Sequence[T], data: bytes | None) -> None:
        """Keep one logged batch if it fits; ``data`` only when an insert will send the bytes as they are."""
        if self.count + len(records) > self._max_records:
            return
        if data is not None and self.size + len(data) > self._max_bytes:
            return
        self._records[path] = records
        self.count += len(records)
        if data is not None:
            self._encoded[path] = data
            self.size += len(data)

    def records(self, path: Path) -> Sequence[T] | None:
        return self._records.get(path)

    def encoded(self, path: Path) -> bytes | None:
        return self._encoded.get(path)

    def forget(self, path: Path) -> None:
        """The batch is inserted (or gone): free its memory."""
        kept = self._records.pop(path, None)
        if kept is not None:
            self.count -= len(kept)
        self.size -= len(self._encoded.pop(path, b""))
