"""Storing a batch the engine refused: split by partition, bisect to the rows at fault, dead-letter those.

This runs only after an insert failed with ``InsertDataError``, so the hot path pays
nothing for it. A batch spread over many days is first cut into pieces of at most
``max_partitions`` days each (every table here is partitioned by day or month of a
timestamp), which is all a backfill or a clock-skewed client needs. A piece that is
still refused is halved, and halved again, until the rows the engine refuses stand
alone; those go to the dead letters with the engine's reason, and every other row is
stored. A salvage halves at most ``MAX_REFUSALS`` refused pieces; past that it dead-letters
refused pieces whole, so a batch of nothing but bad rows cannot hold up storage for long
(``spanscore deadletter replay`` bisects them again later). Pieces are deterministic,
so a piece retried after an outage is the same block as before and the engine's block
deduplication drops what an earlier attempt stored. A ``Salvage`` keeps its remaining
pieces across a retryable failure, so a writer resumes where storage went away.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from spanscore.pipeline import Consumer
from spanscore.storage.insert_errors import InsertDataError
from spanscore.storage.write.deadletter import DeadLetters

log = logging.getLogger(__name__)

T = TypeVar("T")

DAY_NS = 86_400 * 1_000_000_000
MAX_PARTITIONS_PER_PIECE = 64
"""Below ClickHouse's default ``max_partitions_per_insert_block`` (100), with room for a time zone shift."""
MAX_REFUSALS = 64
"""Refused pieces one salvage halves before it dead-letters refused pieces whole: bisecting a batch whose rows
are all bad would cost about two inserts per row and hold up the batches behind it for minutes."""

PartitionKey = Callable[[T], int]
"""A record's partition, e.g. its day: ``timestamp_ns // DAY_NS``."""


def split_by_partition(records: Sequence[T], key: PartitionKey[T] | None, max_partitions: int) -> list[list[T]]:
    """``records`` grouped by ``key``, at most ``max_partitions`` keys per piece, oldest key first."""
    if key is None:
        return [list(records)]
    groups: dict[int, list[T]] = {}
    for record in records:
        groups.setdefault(key(record), []).append(record)
    if len(groups) <= max_partitions:
        return [list(records)]
    ordered = [groups[k] for k in sorted(groups)]
    pieces: list[list[T]] = []
    for start in range(0, len(ordered), max_partitions):
        pieces.append([record for group in ordered[start : start + max_partitions] for record in group])
    return pieces


class Salvage(Generic[T]):
    """One refused batch being stored piece by piece; ``run`` again after a retryable failure to resume."""

    def __init__(
        self,
        pieces: list[list[T]],
        insert: Consumer[Sequence[T]],
        salvager: Salvager[T],
        max_refusals: int = MAX_REFUSALS,
    ) -> None:
        self._stack = list(reversed(pieces))  # the next piece is last
        self._refusals_left = max_refusals
        self._insert = insert
        self._salvager = salvager
        self.stored: list[T] = []
        self.inserts = 0

    @property
    def remaining(self) -> list[T]:
        return [record for piece in reversed(self._stack) for record in piece]

    async def run(self) -> None:
        """Store or dead-letter every remaining piece; a retryable error leaves the rest for the next run."""
        while self._stack:
            piece = self._stack[-1]
            try:
                await self._insert.consume(piece)
            except InsertDataError as exc:
                self._refusals_left -= 1
                if len(piece) == 1 or self._refusals_left < 0:
                    await self._salvager.dead_letter(piece, exc)
                    self._stack.pop()
                else:
                    self._stack.pop()
                    half = len(piece) // 2
                    self._stack.extend((piece[half:], piece[:half]))
                continue
            self._stack.pop()
            self.inserts += 1
            self.stored.extend(piece)


class Salvager(Generic[T]):
    """Starts a ``Salvage`` for each refused batch of one writer and keeps what the engine never takes."""

    def __init__(
        self,
        writer: str,
        dead_letters: DeadLetters[T] | None = None,
        partition_key: PartitionKey[T] | None = None,
        max_partitions: int = MAX_PARTITIONS_PER_PIECE,
    ) -> None:
        self.writer = writer
        self.dead_letters = dead_letters
        self._partition_key = partition_key
        self._max_partitions = max_partitions
        self.dead_lettered = 0
        """Rows moved to the dead letters (or, without a dead-letter directory, logged and dropped)."""
        self.salvaged_batches = 0

    def begin(self, records: Sequence[T], insert: Consumer[Sequence[T]], error: InsertDataError) -> Salvage[T]:
        """A salvage of ``records``, which ``insert`` refused with ``error``."""
        self.salvaged_batches += 1
        log.warning(
            "insert refused, splitting the batch writer=%s records=%d error=%s", self.writer, len(records), error
        )
        pieces = split_by_partition(records, self._partition_key, self._max_partitions)
        return Salvage(pieces, insert, self)

    async def dead_letter(self, records: Sequence[T], error: InsertDataError) -> None:
        self.dead_lettered += len(records)
        if self.dead_letters is None:
            log.error(
                "row refused by storage and dropped (no dead-letter directory) writer=%s error=%s", self.writer, error
            )
            return
        entry = await asyncio.get_running_loop().run_in_executor(
            None, self.dead_letters.add, records, str(error), error.code
        )
        log.error("row refused by storage, dead-lettered writer=%s id=%s error=%s", self.writer, entry.id, error)
