"""Batches this process wrote to the write-ahead spool and has not inserted yet, kept in memory.

With ``acknowledge: spooled`` every batch passes through the spool; reading each one
back from disk before its insert would double the work, so the writer keeps them
here until they are inserted, and, when the insert can take the spool codec's bytes
as they are, those bytes too (no second encoding). Both are bounded: past
``max_records`` records or ``max_bytes`` bytes a batch is not kept, and the replay
reads it back from the spool when its turn comes (200,000 LLM-sized spans would
otherwise hold about 2 GB twice over).

It also knows which waiting batches are on disk only: those it did not keep, those spooled after a failed
insert (``spilled``) and those an earlier process logged (numbered before ``first_number``). Any other batch
the spool lists is still being logged: its writer has not had it back from the spool yet, and reading it from
disk then would cost a read and a decode for nothing, and leave the copy kept afterwards in memory for good.
A batch whose writer never came back after the spool listed it is never kept: the replay waits for it a while,
then ``presume_on_disk``; if its writer comes back with it after all, it is no longer waiting and is not kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Generic, TypeVar

from spanscore.storage.insert_token import BY_CONTENT
from spanscore.storage.write.spool import parse_name

T = TypeVar("T")


class LoggedBatches(Generic[T]):
    """Spool file -> its records (and optionally its bytes), with the totals the bounds need."""

    def __init__(
        self, max_records: int, max_bytes: int, first_number: int = 1, earlier_head: Path | None = None
    ) -> None:
        self._records: dict[Path, Sequence[T]] = {}
        self._encoded: dict[Path, Sequence[bytes]] = {}
        self._unkept: set[Path] = set()  # logged for a spooled ack, over the bounds: never inserted by anyone
        self._spilled: set[Path] = set()  # spooled after a failed insert: perhaps stored under its own token
        self._presumed: set[Path] = set()  # read from disk while perhaps still being logged
        self._gone: set[Path] = set()  # presumed, inserted and forgotten before their writer came back
        self._max_records = max_records
        self._max_bytes = max_bytes
        self._first_number = first_number
        self._earlier_head = earlier_head
        self.count = 0
        """Records kept."""
        self.size = 0
        """Bytes kept."""

    def __len__(self) -> int:
        return len(self._records)

    def keep(self, path: Path, records: Sequence[T], data: Sequence[bytes] | None) -> None:
        """Keep one logged batch if it fits; ``data`` (its parts) only when an insert sends them as they are."""
        if self._came_back(path):
            return
        size = sum(map(len, data)) if data is not None else 0
        if self.count + len(records) > self._max_records or (data is not None and self.size + size > self._max_bytes):
            self._unkept.add(path)
            return
        self._records[path] = records
        self.count += len(records)
        if data is not None:
            self._encoded[path] = data
            self.size += size

    def spilled(self, path: Path) -> None:
        """A batch logged without being kept (spooled after a failed insert): the replay reads it from disk."""
        if not self._came_back(path):
            self._spilled.add(path)

    def presume_on_disk(self, path: Path) -> None:
        """The replay gave up waiting for ``path``'s writer (its logging may have failed): read it from disk."""
        self._presumed.add(path)

    def _came_back(self, path: Path) -> bool:
        """Whether a presumed batch's writer came back after its insert: nothing is left to keep."""
        if path in self._gone:
            self._gone.discard(path)
            return True
        self._presumed.discard(path)
        return False

    def on_disk(self, path: Path) -> bool:
        """Whether a waiting batch not kept here is to be read from disk (False: it is still being logged)."""
        on_disk = path in self._unkept or path in self._spilled or path in self._presumed
        return on_disk or parse_name(path.name)[0] < self._first_number

    def mergeable(self, path: Path) -> bool:
        """Whether a batch on disk may go into an insert with others, under a new token.

        Only one that cannot be in storage already. A batch spooled after a failed insert (here, ``spilled``, or
        by an earlier process, under the ``BY_CONTENT`` token) may have landed; so may the oldest batch an
        earlier process left (``earlier_head``): its replay inserts one set at a time from the head of the
        spool, and a set of several is named in its intent file (``ReplayIntents``), retried as it was. Those
        go alone under their own token, which storage deduplicates. Every other batch an earlier process left
        was never tried: merging them keeps the drain after a restart fast (one insert per batch drained 869
        batches in 29 s where the same writer had merged about 6 per insert, a review's measure).
        """
        if path in self._unkept:
            return True
        number, token = parse_name(path.name)
        return number < self._first_number and token != BY_CONTENT and path != self._earlier_head

    def records(self, path: Path) -> Sequence[T] | None:
        return self._records.get(path)

    def encoded(self, path: Path) -> Sequence[bytes] | None:
        return self._encoded.get(path)

    def forget(self, path: Path) -> None:
        """The batch is inserted (or gone): free its memory."""
        self._unkept.discard(path)
        self._spilled.discard(path)
        if path in self._presumed:
            self._presumed.discard(path)
            self._gone.add(path)
        kept = self._records.pop(path, None)
        if kept is not None:
            self.count -= len(kept)
        self.size -= sum(map(len, self._encoded.pop(path, ())))
