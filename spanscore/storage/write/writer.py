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

Every insert is deduplicated by the engine (``insert_token``): a live insert by its block's content (no
token, so an exporter's retry of the same export is dropped), a batch written to the spool first by a random
token its file keeps. An insert retried after a failure that landed anyway, or replayed after a crash
between the insert and the delete, is dropped by storage: exactly once within each table's deduplication
window (migration 0013).

A batch the engine refuses for what it holds (``InsertDataError``) is never retried
as it is: the ``Salvager`` splits it by partition and then bisects, stores every row it
can and dead-letters the rest with the engine's reason, and the batches behind it flow
on. Only retryable failures are retried; a writer that has been failing for longer
than ``stuck_after_s`` says so in ``problems()``, which ``/healthz`` reports.

A batch of at least ``bulk_min`` records (one large export) goes through a second group commit,
the bulk lane, and is inserted on a connection of its own (``Inserts.bulk``) or spooled beside the
small ones: a 70,000-span insert takes most of a second, and small exports, whose OK waits for
their own insert or fsync, would otherwise queue behind it. The bulk lane is bounded by
``max_pending`` like the small one.

The pieces, each in its own module: ``GroupCommit`` (batching and backpressure), ``Durable``
(the stage behind it, deciding whether a batch is inserted or spooled), ``Spool`` (the
write-ahead log), ``SpoolReplay`` (the spool into storage), ``Inserter`` (one insert, its
salvage, its health, and the hand-on of stored records to the next stage). This class puts
them together from one ``WriterConfig``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Generic, TypeVar

from spanscore.pipeline import Consumer
from spanscore.storage.write.durable import Durable
from spanscore.storage.write.group_commit import GroupCommit, WriterStats
from spanscore.storage.write.inserter import HANDON_WINDOW_S, Inserter
from spanscore.storage.write.inserts import Inserts
from spanscore.storage.write.logged_batches import LoggedBatches
from spanscore.storage.write.replay import SpoolReplay
from spanscore.storage.write.salvage import Salvager
from spanscore.storage.write.spool import BatchSpool
from spanscore.storage.write.writer_config import WriterConfig

__all__ = ["BatchWriter", "Inserts", "WriterConfig"]

T = TypeVar("T")

HELD_BACK_SHARE = 0.5
"""Part of the last minute a writer's inserts waited for the next stage from which ``problems()`` reports it."""


class BatchWriter(Generic[T]):
    """Bounded, flushing on size or time, with ``shutdown`` that drains.

    ``config`` holds the numbers; the arguments are the parts: where records are inserted (``inserts``),
    the stage that gets them once stored, the spool and the salvager.
    """

    def __init__(
        self,
        name: str,
        inserts: Inserts[T],
        config: WriterConfig,
        *,
        stored: Consumer[Sequence[T]] | None = None,
        spool: BatchSpool[T] | None = None,
        salvager: Salvager[T] | None = None,
    ) -> None:
        ack_spooled = config.acknowledge == "spooled"
        self.name = name
        self.stats = WriterStats()
        self._config = config
        if spool is None or spool.codec.pieces is None or not ack_spooled:
            inserts = replace(inserts, encoded=None)  # the log's bytes are kept only behind a spooled ack
        salvager = salvager or Salvager(name)
        self.inserter: Inserter[T] = Inserter(inserts, stats=self.stats, salvager=salvager, stored=stored)
        self._replay: SpoolReplay[T] | None = None
        if spool is not None:
            # Only batches logged for a spooled acknowledgement are kept, so only that mode fills it.
            head = spool.waiting(1)  # the one batch an earlier process may have inserted alone before it stopped
            logged: LoggedBatches[T] = LoggedBatches(
                config.max_pending, config.cache_max_bytes, spool.next_number, head[0] if head else None
            )
            self._replay = SpoolReplay(spool, self.inserter, logged, config, send_encoded=inserts.encoded is not None)
        durable = Durable(self.inserter, self._replay, ack_spooled=ack_spooled)
        self._lanes: list[GroupCommit[T]] = [GroupCommit(name, durable, config, self.stats)]
        if config.bulk_min > 0:
            self._lanes.append(GroupCommit(f"{name}-bulk", durable.bulk_lane(), config, self.stats))

    @property
    def pending(self) -> int:
        return sum(lane.pending for lane in self._lanes)

    @property
    def spool(self) -> BatchSpool[T] | None:
        """The write-ahead log, when the writer has one (what the replay drains)."""
        return None if self._replay is None else self._replay.spool

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
        bulk = len(self._lanes) > 1 and len(records) >= self._config.bulk_min
        await self._lanes[-1 if bulk else 0].consume(records)

    def problems(self) -> list[str]:
        """What keeps this writer from being healthy: retrying for too long, or rows dead-lettered."""
        found = []
        # Without a spool, failures went back to the clients: nothing is held.
        held = self.spool is not None and self.spool.batches > 0
        waited = self.inserter.failing_for
        if held and waited is not None and waited > self._config.stuck_after_s:
            found.append(f"{self.name} writer has been retrying for {waited:.0f}s: {self.stats.last_error}")
        held_back = self.inserter.handon.share()
        if held_back >= HELD_BACK_SHARE:
            spooled = self._config.acknowledge == "spooled"
            behind = "what the spool acknowledged waits to be stored" if spooled else "acknowledgements wait for it"
            found.append(
                f"{self.name} writer: inserts waited {held_back:.0%} of the last {HANDON_WINDOW_S:.0f}s for the stage "
                f"after storage (run assembly, see runs_assembly_queued_records) to take what they stored: scores "
                f"come late, and {behind}"
            )
        dead = self.salvager.dead_letters
        if dead is not None and dead.batches:
            found.append(
                f"{self.name}: {dead.records} rows dead-lettered in {dead.batches} batches "
                f"(see `spanscore deadletter list`)"
            )
        return found

    async def shutdown(self) -> None:
        """Flush everything already accepted, then stop; safe to call twice or before start.

        The replay is told to close only once the lanes have logged their last batches: told before, it could find
        the spool empty between two of them and stop, leaving an acknowledged batch on disk for the next start.
        """
        for lane in self._lanes:
            await lane.shutdown()
        if self._replay is not None:
            await self._replay.stop()
            self._replay.spool.close()
