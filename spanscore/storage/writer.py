"""The durable write path: group commit -> write-ahead spool -> inserter, for spans, logs, scores and decisions.

``consume`` hands records to a ``GroupCommit`` (many concurrent exports, few large
writes, bounded with backpressure), whose sink here makes each batch durable: in
storage, so an OTLP acknowledgement means "stored", or, when an insert fails and a
spool exists, fsynced on local disk and acknowledged from there. While the spool
holds batches, new batches queue behind them so storage receives everything in
arrival order, and a replay task drains the spool as soon as storage takes inserts
again (also after a restart).

With ``acknowledge="spooled"`` the spool is the write-ahead log: every batch is
fsynced there and acknowledged at once, and the replay task inserts behind it,
merging waiting batches up to ``batch_max`` records per insert. An
acknowledgement then costs one fsync instead of one ClickHouse insert (tens of
milliseconds of fixed cost per part in chDB), and inserts no longer stall the
exporters. Batches written by this process stay in memory (bounded by
``max_pending``) until inserted, so the log is read back only after a restart
or an overflow. Inserts are spaced ``insert_interval`` apart so their fixed
engine cost is paid for many batches at once, and when the spool codec can join
encoded batches, an insert sends the bytes already written to the log.

A batch the engine refuses for what it holds (``InsertDataError``) is never retried
as it is: the ``Salvager`` splits it by partition and then bisects, stores every row it
can and dead-letters the rest with the engine's reason, and the batches behind it flow
on. Only retryable failures are retried; a writer that has been failing for longer
than ``stuck_after_s`` says so in ``problems()``, which ``/healthz`` reports.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

from spanscore.pipeline import Consumer
from spanscore.storage.group_commit import GroupCommit, WriterStats, wait_while
from spanscore.storage.insert_errors import InsertDataError
from spanscore.storage.logged_batches import LoggedBatches
from spanscore.storage.salvage import Salvage, Salvager
from spanscore.storage.spool import Spool

log = logging.getLogger(__name__)

T = TypeVar("T")

InsertFn = Callable[[Sequence[T]], Awaitable[None]]
EncodedInsertFn = Callable[[bytes], Awaitable[None]]


class BatchWriter(Generic[T]):
    """Bounded, flushing on size or time, with ``shutdown`` that drains."""

    def __init__(
        self,
        name: str,
        insert: InsertFn[T],
        *,
        batch_max: int,
        flush_interval: float,
        max_pending: int,
        stored: Consumer[Sequence[T]] | None = None,
        spool: Spool[T] | None = None,
        replay_backoff_s: float = 1.0,
        acknowledge: str = "stored",
        insert_interval: float = 0.0,
        insert_encoded: EncodedInsertFn | None = None,
        cache_max_bytes: int = 256 << 20,
        salvager: Salvager[T] | None = None,
        stuck_after_s: float = 30.0,
    ) -> None:
        if acknowledge not in ("stored", "spooled"):
            raise ValueError(f"acknowledge must be 'stored' or 'spooled', got {acknowledge!r}")
        if acknowledge == "spooled" and spool is None:
            raise ValueError("acknowledge='spooled' needs a spool")
        self._ack_spooled = acknowledge == "spooled"
        # Only batches logged for a spooled acknowledgement are kept, so only that mode uses it.
        self._logged: LoggedBatches[T] = LoggedBatches(max_pending, cache_max_bytes)
        self._join_encoded = spool.codec.join if spool is not None else None
        usable = self._join_encoded is not None and self._ack_spooled
        self._insert_encoded = insert_encoded if usable else None
        self._retry: list[Path] = []  # the batch files of a failed replay insert, retried exactly as they were
        self._spool = spool
        self._replay_backoff = replay_backoff_s
        self._insert_interval = insert_interval
        self._last_insert = 0.0
        self._replay_task: asyncio.Task[None] | None = None
        self._spooled_event = asyncio.Event()
        self.name = name
        self._insert = insert
        self._batch_max = batch_max
        self._stored_to = stored
        self._closing = False
        self.stats = WriterStats()
        self._batcher: GroupCommit[T] = GroupCommit(
            name,
            self._write,
            batch_max=batch_max,
            flush_interval=flush_interval,
            max_pending=max_pending,
            stats=self.stats,
        )
        self.salvager: Salvager[T] = salvager or Salvager(name)
        self._salvaging: Salvage[T] | None = None  # the refused batch at the head of the spool, part-stored
        self._stuck_after = stuck_after_s
        self._failing_since: float | None = None  # monotonic time of the first failure since the last success

    @property
    def pending(self) -> int:
        return self._batcher.pending

    async def start(self) -> None:
        if self._replay_task is None:
            self._closing = False
            await self._batcher.start()
            if self._spool is not None:
                self._replay_task = asyncio.create_task(self._replay(), name=f"replay-{self.name}")

    async def consume(self, records: Sequence[T], /) -> None:
        """Return once ``records`` are durable; raise RetryableError when full or storage fails without a spool."""
        await self._batcher.consume(records)

    async def _write(self, records: list[T]) -> None:
        """Make ``records`` durable: in storage, or (when storage fails and a spool exists) on disk."""
        if self._ack_spooled:
            path, written = await self._to_spool(records, count=False)
            self._logged.keep(path, records, written if self._insert_encoded is not None else None)
            return
        if self._spool is not None and self._spool.batches:
            await self._to_spool(records)  # storage is behind its spool: keep arrival order
            return
        started = time.perf_counter()
        try:
            await self._insert(records)
        except InsertDataError as exc:
            await self._salvage_now(records, exc)
            return
        except Exception as exc:
            self._note_failure(exc, len(records))
            if self._spool is None:
                raise
            await self._to_spool(records)
            return
        self._succeeded()
        self.stats.inserts += 1
        self.stats.stored += len(records)
        self.stats.insert_seconds += time.perf_counter() - started
        await self._stored(records)

    async def _salvage_now(self, records: list[T], error: InsertDataError) -> None:
        """Store a refused batch piece by piece; if storage goes away meanwhile, spool what is left."""
        salvage = self.salvager.begin(records, self._insert, error)
        try:
            await salvage.run()
        except Exception as exc:
            self._note_failure(exc, len(salvage.remaining))
            if self._spool is None:
                raise
            await self._to_spool(salvage.remaining)
        else:
            self._succeeded()
        finally:
            self.stats.inserts += salvage.inserts
            self.stats.stored += len(salvage.stored)
            await self._stored(salvage.stored)

    def _note_failure(self, exc: BaseException, count: int) -> None:
        if self._failing_since is None:
            self._failing_since = time.monotonic()
        self.stats.failed_inserts += 1
        self.stats.last_error = str(exc)
        log.warning("insert failed writer=%s records=%d error=%s", self.name, count, exc)

    def _succeeded(self) -> None:
        self._failing_since = None

    def problems(self) -> list[str]:
        """What keeps this writer from being healthy: retrying for too long, or rows dead-lettered."""
        found = []
        held = self._spool is not None and self._spool.batches > 0  # without a spool, failures went back to clients
        if held and self._failing_since is not None and time.monotonic() - self._failing_since > self._stuck_after:
            waited = time.monotonic() - self._failing_since
            found.append(f"{self.name} writer has been retrying for {waited:.0f}s: {self.stats.last_error}")
        dead = self.salvager.dead_letters
        if dead is not None and dead.batches:
            found.append(
                f"{self.name}: {dead.records} rows dead-lettered in {dead.batches} batches "
                f"(see `spanscore deadletter list`)"
            )
        return found

    async def _to_spool(self, records: list[T], *, count: bool = True) -> tuple[Path, bytes]:
        """Log one batch; returns its file and the bytes written."""
        assert self._spool is not None
        path, data = await asyncio.get_running_loop().run_in_executor(None, self._spool.append, records)
        if count:
            self.stats.spooled += len(records)
        self._spooled_event.set()
        return path, data

    async def _stored(self, records: Sequence[T]) -> None:
        """Hand what was just inserted to the next stage (spans and logs: the run assembler).

        Its failure is logged, never the writer's: the records are stored, and what the next stage
        missed it can read back from storage.
        """
        if self._stored_to is not None and records:
            try:
                await self._stored_to.consume(records)
            except Exception:
                log.exception("the stage after the %s writer failed on %d stored records", self.name, len(records))

    async def _replay(self) -> None:
        """Drain the spool oldest first; a batch file is deleted only after its insert succeeded.

        At shutdown it keeps going while storage takes inserts, so a drained process leaves an
        empty spool; when storage is down it stops and the next process replays.
        """
        assert self._spool is not None
        spool = self._spool
        while True:
            if not spool.batches:
                if self._closing:
                    return
                self._spooled_event.clear()
                if spool.batches:
                    continue
                try:
                    await asyncio.wait_for(self._spooled_event.wait(), 1.0)
                except TimeoutError:
                    pass
                continue
            await self._linger()
            if not await self._replay_some(spool):
                if self._closing:
                    return
                await asyncio.sleep(self._replay_backoff)

    async def _linger(self) -> None:
        """Space inserts behind an acknowledging spool ``insert_interval`` apart.

        Every insert has a fixed engine cost (tens of milliseconds of CPU in chDB, whatever its
        size), so back-to-back inserts of whatever just arrived would take CPU from the receivers
        at moderate rates. Waiting lets batches merge; a full ``batch_max`` or shutdown goes at once.
        """
        if not self._ack_spooled or self._retry:
            return
        await wait_while(
            self._spooled_event,
            self._last_insert + self._insert_interval,
            lambda: not self._closing and self._logged.count < self._batch_max,
        )

    async def _next_replay(self, spool: Spool[T]) -> tuple[list[Path], list[T], int]:
        """The batch files for the next insert, their records, and how many of those came from disk."""
        loop = asyncio.get_running_loop()
        taken: list[Path] = []
        records: list[T] = []
        from_disk = 0
        if self._retry:
            taken = list(self._retry)
            for path in taken:
                batch = self._logged.records(path)
                if batch is None:
                    batch = await loop.run_in_executor(None, spool.read, path)
                    from_disk += len(batch)
                records.extend(batch)
            return taken, records, from_disk
        for path in await loop.run_in_executor(None, spool.waiting, 256):
            batch = self._logged.records(path)
            if batch is None:  # read back from disk: it goes alone
                if not taken:
                    records = await loop.run_in_executor(None, spool.read, path)
                    return [path], records, len(records)
                break
            if taken and len(records) + len(batch) > self._batch_max:
                break
            taken.append(path)
            records.extend(batch)
        return taken, records, 0

    async def _replay_some(self, spool: Spool[T]) -> bool:
        """Insert the oldest waiting batches as one insert of at most ``batch_max`` records.

        A retry must send the very same block as the failed attempt, so that storage's
        deduplication drops whatever that attempt wrote before failing: a failed set of files
        is retried as it was, and a batch read back from disk (it failed before, in this process
        or a previous one) always goes alone. Only batches never tried are merged.
        """
        loop = asyncio.get_running_loop()
        taken, records, from_disk = await self._next_replay(spool)
        if not taken:
            return True
        started = time.perf_counter()
        self._last_insert = time.monotonic()
        try:
            stored = await self._insert_taken(taken, records)
        except Exception as exc:
            self._note_failure(exc, len(records))
            self._retry = taken
            return False
        self._succeeded()
        self._retry = []
        await loop.run_in_executor(None, _remove_all, spool, taken)
        for path in taken:
            self._logged.forget(path)
        self.stats.inserts += 1
        self.stats.insert_seconds += time.perf_counter() - started
        self.stats.replayed += from_disk
        self.stats.stored += len(stored)
        await self._stored(stored)
        if from_disk:
            log.info("replayed spooled batches writer=%s records=%d left=%d", self.name, from_disk, spool.batches)
        return True

    async def _insert_taken(self, taken: list[Path], records: list[T]) -> Sequence[T]:
        """Insert the batches ``taken`` from the spool; returns the records now stored.

        A refused set is salvaged, and a salvage interrupted by an outage resumes on the retry
        of the same set instead of starting over.
        """
        if self._salvaging is None:
            encoded = [self._logged.encoded(path) for path in taken]
            try:
                if self._insert_encoded is not None and self._join_encoded is not None and None not in encoded:
                    await self._insert_encoded(self._join_encoded([data for data in encoded if data is not None]))
                else:
                    await self._insert(records)
                return records
            except InsertDataError as exc:
                self._salvaging = self.salvager.begin(records, self._insert, exc)
        salvage = self._salvaging
        await salvage.run()
        self._salvaging = None
        return salvage.stored

    async def shutdown(self) -> None:
        """Flush everything already accepted, then stop; safe to call twice or before start."""
        self._closing = True
        await self._batcher.shutdown()
        if self._replay_task is not None:
            self._spooled_event.set()
            await self._replay_task
            self._replay_task = None


def _remove_all(spool: Spool[T], paths: list[Path]) -> None:
    for path in paths:
        spool.remove(path)
