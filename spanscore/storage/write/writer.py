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

Every batch gets a random deduplication token when it is first written (``insert_token``); its inserts
carry it and its spool file keeps it, so an insert retried after a failure that landed anyway, or
replayed after a crash between the insert and the delete, is dropped by storage: exactly once within
each table's deduplication window (migration 0013).

A batch the engine refuses for what it holds (``InsertDataError``) is never retried
as it is: the ``Salvager`` splits it by partition and then bisects, stores every row it
can and dead-letters the rest with the engine's reason, and the batches behind it flow
on. Only retryable failures are retried; a writer that has been failing for longer
than ``stuck_after_s`` says so in ``problems()``, which ``/healthz`` reports.

A batch of at least ``bulk_min`` records (one large export) goes through a second group commit,
the bulk lane, and is inserted on a connection of its own (``insert_bulk``) or spooled beside the
small ones: a 70,000-span insert takes most of a second, and small exports, whose OK waits for
their own insert or fsync, would otherwise queue behind it. The bulk lane is bounded by
``max_pending`` like the small one.

The pieces, each in its own module: ``GroupCommit`` (batching and backpressure), ``Spool``
(the write-ahead log), ``SpoolReplay`` (the spool into storage), ``Inserter`` (one insert,
its salvage, its health, and the hand-on of stored records to the next stage). This class
decides which of them a batch goes through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Generic, TypeVar

from spanscore.pipeline import Consumer
from spanscore.storage.insert_errors import InsertDataError
from spanscore.storage.insert_token import new_token
from spanscore.storage.write.group_commit import GroupCommit, WriterStats
from spanscore.storage.write.inserter import EncodedInsertFn, Inserter
from spanscore.storage.write.logged_batches import LoggedBatches
from spanscore.storage.write.replay import SpoolReplay
from spanscore.storage.write.salvage import InsertFn, Salvager
from spanscore.storage.write.spool import Spool

__all__ = ["BatchWriter", "EncodedInsertFn", "InsertFn"]

T = TypeVar("T")


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
        bulk_min: int = 0,
        insert_bulk: InsertFn[T] | None = None,
    ) -> None:
        if acknowledge not in ("stored", "spooled"):
            raise ValueError(f"acknowledge must be 'stored' or 'spooled', got {acknowledge!r}")
        if acknowledge == "spooled" and spool is None:
            raise ValueError("acknowledge='spooled' needs a spool")
        self.name = name
        self.stats = WriterStats()
        self._ack_spooled = acknowledge == "spooled"
        # Only batches logged for a spooled acknowledgement are kept, so only that mode uses it.
        self._logged: LoggedBatches[T] = LoggedBatches(max_pending, cache_max_bytes)
        join = spool.codec.join if spool is not None and self._ack_spooled else None
        self.inserter: Inserter[T] = Inserter(
            name,
            insert,
            stats=self.stats,
            salvager=salvager or Salvager(name),
            stored=stored,
            insert_encoded=insert_encoded if join is not None else None,
            insert_bulk=insert_bulk,
        )
        self._spool = spool
        self._replay: SpoolReplay[T] | None = None
        if spool is not None:
            self._replay = SpoolReplay(
                spool,
                self.inserter,
                self._logged,
                batch_max=batch_max,
                linger=self._ack_spooled,
                insert_interval=insert_interval,
                backoff_s=replay_backoff_s,
                join_encoded=join if self.inserter.insert_encoded is not None else None,
            )
        self._batcher: GroupCommit[T] = GroupCommit(
            name,
            self._write,
            batch_max=batch_max,
            flush_interval=flush_interval,
            max_pending=max_pending,
            stats=self.stats,
        )
        self._bulk_min = bulk_min
        self._bulk: GroupCommit[T] | None = None
        if bulk_min > 0:
            self._bulk = GroupCommit(
                f"{name}-bulk",
                self._write_bulk,
                batch_max=batch_max,
                flush_interval=flush_interval,
                max_pending=max_pending,
                stats=self.stats,
            )
        self._stuck_after = stuck_after_s

    @property
    def _lanes(self) -> list[GroupCommit[T]]:
        return [self._batcher] if self._bulk is None else [self._batcher, self._bulk]

    @property
    def pending(self) -> int:
        return sum(lane.pending for lane in self._lanes)

    @property
    def salvager(self) -> Salvager[T]:
        return self.inserter.salvager

    async def start(self) -> None:
        for lane in self._lanes:
            await lane.start()
        if self._replay is not None:
            self._replay.start(self.name)

    async def consume(self, records: Sequence[T], /) -> None:
        """Return once ``records`` are durable; raise RetryableError when full or storage fails without a spool."""
        if self._bulk is not None and len(records) >= self._bulk_min:
            await self._bulk.consume(records)
        else:
            await self._batcher.consume(records)

    async def _write_bulk(self, records: list[T]) -> None:
        await self._write(records, bulk=True)

    async def _write(self, records: list[T], *, bulk: bool = False) -> None:
        """Make ``records`` durable: in storage, or (when storage fails and a spool exists) on disk."""
        if self._ack_spooled:
            path, written = await self._to_spool(records, count=False)
            self._logged.keep(path, records, written if self.inserter.insert_encoded is not None else None)
            return
        if self._spool is not None and self._spool.batches:
            await self._to_spool(records)  # storage is behind its spool: keep arrival order
            return
        token = new_token()  # kept with the batch if it is spooled: an insert that failed may still have landed
        try:
            await self.inserter.store(records, bulk=bulk, token=token)
        except InsertDataError as exc:
            await self._salvage_now(records, exc)
            return
        except Exception as exc:
            self.inserter.failed(exc, len(records))
            if self._spool is None:
                raise
            await self._to_spool(records, token=token)
            return
        self.inserter.recovered()
        await self.inserter.stored(records)

    async def _salvage_now(self, records: list[T], error: InsertDataError) -> None:
        """Store a refused batch piece by piece; if storage goes away meanwhile, spool what is left."""
        salvage = self.inserter.begin_salvage(records, error)
        try:
            await salvage.run()
        except Exception as exc:
            self.inserter.failed(exc, len(salvage.remaining))
            if self._spool is None:
                raise
            await self._to_spool(salvage.remaining)
        else:
            self.inserter.recovered()
        finally:
            await self.inserter.stored(salvage.stored, salvage.inserts)

    def problems(self) -> list[str]:
        """What keeps this writer from being healthy: retrying for too long, or rows dead-lettered."""
        found = []
        held = self._spool is not None and self._spool.batches > 0  # without a spool, failures went back to clients
        waited = self.inserter.failing_for
        if held and waited is not None and waited > self._stuck_after:
            found.append(f"{self.name} writer has been retrying for {waited:.0f}s: {self.stats.last_error}")
        dead = self.salvager.dead_letters
        if dead is not None and dead.batches:
            found.append(
                f"{self.name}: {dead.records} rows dead-lettered in {dead.batches} batches "
                f"(see `spanscore deadletter list`)"
            )
        return found

    async def _to_spool(self, records: list[T], *, count: bool = True, token: str | None = None) -> tuple[Path, bytes]:
        """Log one batch (under ``token`` when an insert of it was tried); returns its file and the bytes written."""
        assert self._spool is not None and self._replay is not None
        path, data = await asyncio.get_running_loop().run_in_executor(None, self._spool.append, records, token)
        if count:
            self.stats.spooled += len(records)
        self._replay.wake()
        return path, data

    async def shutdown(self) -> None:
        """Flush everything already accepted, then stop; safe to call twice or before start."""
        if self._replay is not None:
            self._replay.closing = True
        for lane in self._lanes:
            await lane.shutdown()
        if self._replay is not None:
            await self._replay.stop()
