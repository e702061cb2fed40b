"""The last piece of the write path: one insert into storage, and what its outcome means for the writer.

A success is counted and the rows are handed on to the next stage (``stored``). A refusal for what the
rows hold (``InsertDataError``) is never retried as it is: a ``Salvage`` stores what it can and
dead-letters the rest. Any other failure is counted and remembered (``failing_for``), and raised, so the
caller keeps the rows (in the spool) or gives them back to the client. Both the direct write of a batch
and the spool's replay insert through here; the tests put storage down by replacing one of its ``inserts``.
Each insert of a whole batch carries the batch's deduplication token (``insert_token``), so whichever
of its attempts landed first, the others store nothing.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Sequence
from typing import Generic, TypeVar

from spanscore.pipeline import Consumer
from spanscore.storage.insert_errors import InsertDataError
from spanscore.storage.insert_token import insert_token
from spanscore.storage.write.group_commit import WriterStats
from spanscore.storage.write.inserts import Inserts
from spanscore.storage.write.salvage import Salvage, Salvager

log = logging.getLogger(__name__)

HANDON_WINDOW_S = 60.0
"""The window ``RecentWaits`` reports over."""

T = TypeVar("T")


class Inserter(Generic[T]):
    def __init__(
        self, inserts: Inserts[T], *, stats: WriterStats, salvager: Salvager[T], stored: Consumer[Sequence[T]] | None
    ) -> None:
        self.inserts = inserts
        """Where batches go into storage; replaced in tests to put storage down."""
        self.stats = stats
        self.salvager = salvager
        self._stored_to = stored
        self._failing_since: float | None = None  # monotonic time of the first failure since the last success
        self.handon = RecentWaits()
        """How long the last minute's hand-ons to the next stage took: a full run assembler holds the writer."""

    @property
    def hands_on(self) -> bool:
        """Whether stored records go on to a next stage (spans and logs: the run assembler)."""
        return self._stored_to is not None

    @property
    def name(self) -> str:
        """The writer's name, which its salvager carries into the dead letters."""
        return self.salvager.writer

    async def store(
        self,
        records: Sequence[T],
        encoded: Sequence[bytes] | None = None,
        *,
        bulk: bool = False,
        token: str | None = None,
    ) -> None:
        """One insert of ``records`` (as the logged batches' ``encoded`` parts when given) under ``token``.

        Raises what storage raised.
        """
        started = time.perf_counter()
        inserts = self.inserts
        with insert_token(token):
            if encoded is not None and inserts.encoded is not None:
                await inserts.encoded.consume(encoded)
            elif bulk and inserts.bulk is not None:
                await inserts.bulk.consume(records)
            else:
                await inserts.rows.consume(records)
        self.stats.insert_seconds += time.perf_counter() - started

    def begin_salvage(self, records: Sequence[T], error: InsertDataError) -> Salvage[T]:
        return self.salvager.begin(records, self.inserts.rows, error)

    def failed(self, exc: BaseException, count: int) -> None:
        if self._failing_since is None:
            self._failing_since = time.monotonic()
        self.stats.failed_inserts += 1
        self.stats.last_error = str(exc)
        log.warning("insert failed writer=%s records=%d error=%s", self.name, count, exc)

    def recovered(self) -> None:
        """An insert went through: storage is taking rows again."""
        self._failing_since = None

    async def stored(self, records: Sequence[T], inserts: int = 1) -> None:
        """Count ``records`` as stored by ``inserts`` inserts and hand them to the next stage.

        The next stage's failure (spans and logs: the run assembler) is logged, never the writer's:
        the records are stored, and what that stage missed it can read back from storage.
        """
        self.stats.inserts += inserts
        self.stats.stored += len(records)
        if self._stored_to is not None and records:
            started = time.monotonic()
            try:
                await self._stored_to.consume(records)
            except Exception:
                log.exception("the stage after the %s writer failed on %d stored records", self.name, len(records))
            waited = time.monotonic() - started
            self.stats.handon_wait_seconds += waited
            self.handon.add(started, waited)

    @property
    def failing_for(self) -> float | None:
        """Seconds since the first failure not yet followed by a success; None while inserts succeed."""
        return None if self._failing_since is None else time.monotonic() - self._failing_since


class RecentWaits:
    """Seconds spent waiting within the last ``HANDON_WINDOW_S``, from the waits that ended in it."""

    def __init__(self) -> None:
        self._waits: deque[tuple[float, float]] = deque()  # (ended at, seconds), oldest first

    def add(self, started: float, seconds: float) -> None:
        self._waits.append((started + seconds, seconds))
        self._forget(started + seconds)

    def share(self, now: float | None = None) -> float:
        """The part of the last window spent waiting (0-1)."""
        now = time.monotonic() if now is None else now
        self._forget(now)
        return min(1.0, sum(seconds for _, seconds in self._waits) / HANDON_WINDOW_S)

    def _forget(self, now: float) -> None:
        while self._waits and self._waits[0][0] < now - HANDON_WINDOW_S:
            self._waits.popleft()
