"""The spool's way into storage: oldest batch first, a file deleted only after its insert succeeded.

It runs whenever the spool holds batches: behind an acknowledging spool (``acknowledge: spooled``) all
the time, otherwise only after a failed insert put batches there (and after a restart found some).
Batches this process logged are still in memory (``LoggedBatches``) and are merged into inserts of up
to ``records_per_insert`` records, with those read back from disk; a batch that may be in storage already
goes alone (``LoggedBatches.mergeable``), and a failed set is retried exactly as it was. A set the engine
refuses for its content is salvaged, and the salvage resumes on the retry after an outage. No error ends the
replay: a batch that cannot be read back, or a set stored but not marked done, is retried after a backoff,
and the writer's problems (``/healthz``) say so meanwhile.

Every insert carries a deduplication token (``spanscore.storage.insert_token``): a single batch its
own, kept in its file's name; a merged set a new one, recorded with the set's files in a replay intent
(``replay_intent``) before the insert. A retry, in this process or after a crash between the insert and
the deletes, sends the same files under the same token, so storage keeps one copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from spanscore.storage.insert_errors import InsertDataError
from spanscore.storage.insert_token import new_token
from spanscore.storage.write.group_commit import wait_while
from spanscore.storage.write.inserter import Inserter
from spanscore.storage.write.logged_batches import LoggedBatches
from spanscore.storage.write.replay_intent import ReplayIntents
from spanscore.storage.write.salvage import Salvage
from spanscore.storage.write.spool import BatchSpool
from spanscore.storage.write.writer_config import WriterConfig

log = logging.getLogger(__name__)

T = TypeVar("T")

LOGGING_GRACE_S = 5.0
"""Seconds the replay waits for a listed batch's writer to come back with it before reading it from disk."""


class SpoolReplay(Generic[T]):
    def __init__(
        self,
        spool: BatchSpool[T],
        inserter: Inserter[T],
        logged: LoggedBatches[T],
        config: WriterConfig,
        *,
        send_encoded: bool,
    ) -> None:
        self.spool = spool
        """The write-ahead log this replay drains (the writer's ``Durable`` stage appends to it)."""
        self._inserter = inserter
        self.logged = logged
        """Batches logged for a spooled acknowledgement, kept in memory until inserted."""
        self._insert_max = config.records_per_insert
        self._read_back_max = config.read_back_max_bytes
        self._insert_max_bytes = config.insert_max_bytes or sys.maxsize
        self._ahead: _Batch[T] | None = None  # read back from disk and left for the next insert by the bounds
        self._awaited: tuple[Path, float] | None = None  # the batch still being logged that stopped the last insert
        self._linger_enabled = config.acknowledge == "spooled"
        self._insert_interval = config.insert_interval
        self._backoff = config.replay_backoff_s
        self._send_encoded = send_encoded
        """Inserts take the batches' logged bytes (``Inserts.encoded``): a set is sent as its batches were written."""
        self._intents = ReplayIntents(spool.directory, spool.holds)
        # The batch files and token of a failed insert, retried exactly as they were; first, a merged insert a
        # previous process recorded and may have made (read here, so an unreadable record stops the start).
        intent = self._intents.read()
        self._retry: tuple[list[Path], str] | None = (list(intent.files), intent.token) if intent else None
        if self._retry is not None and not self._retry[0]:
            self._retry = None  # its files are all gone: the insert and the deletes were done
        self._salvaging: Salvage[T] | None = None  # the refused set at the head of the spool, part-stored
        self._last_insert = 0.0
        self._task: asyncio.Task[None] | None = None
        self._spooled = asyncio.Event()
        self.closing = False
        """Set at shutdown: keep going while storage takes inserts, stop at the first failure or an empty spool."""

    def start(self, name: str) -> None:
        if self._task is None:
            self.closing = False
            self._task = asyncio.create_task(self._run(), name=f"replay-{name}")

    def wake(self) -> None:
        """A batch was logged: insert it (after the linger)."""
        self._spooled.set()

    async def stop(self) -> None:
        self.closing = True
        if self._task is not None:
            self._spooled.set()
            await self._task
            self._task = None

    async def _run(self) -> None:
        """Drain the spool until shutdown.

        At shutdown it keeps going while storage takes inserts, so a drained process leaves an empty
        spool; when storage is down it stops and the next process replays.
        """
        spool = self.spool
        while True:
            if not spool.batches:
                if self.closing:
                    return
                self._spooled.clear()
                if spool.batches:
                    continue
                try:
                    await asyncio.wait_for(self._spooled.wait(), 1.0)
                except TimeoutError:
                    pass
                continue
            await self._linger()
            try:
                replayed = await self._replay_some()
            except Exception as exc:  # an error outside the insert must not end the drain (nothing would restart it)
                log.exception("spool replay writer=%s failed; retrying", self._inserter.name)
                self._inserter.failed(exc, 0)
                replayed = False
            if not replayed:
                if self.closing:
                    return
                await asyncio.sleep(self._backoff)

    async def _linger(self) -> None:
        """Space inserts behind an acknowledging spool ``insert_interval`` apart.

        Every insert has a fixed engine cost (tens of milliseconds of CPU in chDB, whatever its
        size), so back-to-back inserts of whatever just arrived would take CPU from the receivers
        at moderate rates. Waiting lets batches merge; a full ``records_per_insert``, a backlog on disk
        or shutdown goes at once.
        """
        if not self._linger_enabled or self._retry:
            return
        await wait_while(
            self._spooled,
            self._last_insert + self._insert_interval,
            lambda: not self.closing and not self._full_insert_waits() and not self._behind_on_disk(),
        )

    def _full_insert_waits(self) -> bool:
        """Whether the batches kept in memory already fill an insert (in records, or in logged bytes)."""
        return self.logged.count >= self._insert_max or self.logged.size >= self._insert_max_bytes

    def _behind_on_disk(self) -> bool:
        """Whether batches wait on disk only (past the memory bound, or from before a restart): a backlog."""
        return self.spool.batches > len(self.logged)

    async def _read_back(self, path: Path) -> _Batch[T]:
        """A batch that is not in memory, from the spool on disk (the one read ahead last time if it is that one)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead.path == path:
            return ahead
        return await asyncio.get_running_loop().run_in_executor(None, self._read_from_disk, path)

    def _read_from_disk(self, path: Path) -> _Batch[T]:
        codec = self.spool.codec
        data = self.spool.read_encoded(path)
        joinable = self._send_encoded and codec.joinable(data)
        return _Batch(path, codec.decode(data), (data,) if joinable else None, read_back=len(data))

    def _in_memory(self, path: Path) -> _Batch[T] | None:
        records = self.logged.records(path)
        return None if records is None else _Batch(path, records, self.logged.encoded(path), read_back=0)

    async def _next(self) -> _Set[T]:
        """The batches of the next insert and its token: the retried set, or the oldest waiting batches merged.

        Batches merge up to ``records_per_insert`` records and ``insert_max_bytes`` of their logged bytes whether
        they are in memory or read back from disk (those up to ``read_back_max_bytes`` too): a spool that
        overflowed its memory bound (LLM-sized spans, storage behind) is drained by large inserts, not one batch
        per insert, and an insert of LLM-sized spans holds tens of megabytes, not hundreds. A batch read and then
        left out for the bounds is kept for the next insert rather than read twice. A batch that may already be stored
        under its own token (the oldest an earlier process left, or one spooled after a failed insert) goes alone
        under it: merged under a new token, storage would keep it twice.
        """
        if self._retry:
            paths, token = self._retry
            batches = [self._in_memory(path) or await self._read_back(path) for path in paths]
            return _Set(batches, token)
        taken: list[_Batch[T]] = []
        count = read_bytes = size = 0
        self._spooled.clear()  # set again by the next batch logged: ``_replay_some`` waits for it when all are
        for path in await asyncio.get_running_loop().run_in_executor(None, self.spool.waiting, 256):
            batch = self._in_memory(path)
            if batch is None:
                if not self.logged.on_disk(path) and not self._waited_long_for(path):
                    break  # still being logged: taken from memory once it is
                if not self.logged.mergeable(path):  # may be stored already under its own token: alone
                    if taken:
                        break
                    alone = await self._read_back(path)
                    return _Set([alone], self.spool.token(path))
                if taken and read_bytes >= self._read_back_max:
                    break
                batch = await self._read_back(path)
            if taken and (count + len(batch.records) > self._insert_max or size + batch.size > self._insert_max_bytes):
                if batch.read_back:
                    self._ahead = batch
                break
            taken.append(batch)
            count += len(batch.records)
            read_bytes += batch.read_back
            size += batch.size
        if not taken:
            return _Set([], "")
        token = self.spool.token(taken[0].path) if len(taken) == 1 else new_token()
        return _Set(taken, token)

    def _waited_long_for(self, path: Path) -> bool:
        """Whether ``path`` has been listed, and not kept by its writer, for ``LOGGING_GRACE_S``.

        A batch the spool lists and its writer never comes back with (its export cancelled between the append
        and the keep) would otherwise hold the replay forever. (One whose sync failed is not listed any more.)
        """
        now = time.monotonic()
        if self._awaited is None or self._awaited[0] != path:
            self._awaited = (path, now)
            return False
        if now - self._awaited[1] < LOGGING_GRACE_S:
            return False
        self._awaited = None
        self.logged.presume_on_disk(path)
        return True

    async def _replay_some(self) -> bool:
        """Insert the oldest waiting batches as one insert of at most ``records_per_insert``; False if it failed."""
        loop = asyncio.get_running_loop()
        chosen = await self._next()  # a failed read back is counted and retried by ``_run``'s handler
        taken, token, records = chosen.paths, chosen.token, chosen.records
        from_disk = chosen.from_disk
        if not taken:  # the oldest batch is still being logged
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._spooled.wait(), 1.0)
            return True
        self._last_insert = time.monotonic()
        try:
            if len(taken) > 1:  # recorded again on a retry: the same set, and a failed write is retried too
                await loop.run_in_executor(None, self._intents.write, taken, token)
            stored = await self._insert_taken(chosen)
        except Exception as exc:
            self._inserter.failed(exc, len(records))
            self._retry = (taken, token)
            return False
        try:
            await loop.run_in_executor(None, _remove_all, self.spool, taken, self._intents)
        except Exception as exc:  # stored, not marked done: the same set goes again under its token (deduplicated)
            self._inserter.failed(exc, len(records))
            self._retry = (taken, token)
            return False
        self._inserter.recovered()
        self._retry = None
        for path in taken:
            self.logged.forget(path)
        self._inserter.stats.replayed += from_disk
        await self._inserter.stored(stored)
        if from_disk:
            log.info(
                "replayed spooled batches writer=%s records=%d left=%d",
                self._inserter.name,
                from_disk,
                self.spool.batches,
            )
        return True

    async def _insert_taken(self, chosen: _Set[T]) -> Sequence[T]:
        """Insert the batches ``chosen`` under their token; returns the records now stored.

        A refused set is salvaged, and a salvage interrupted by an outage resumes on the retry
        of the same set instead of starting over.
        """
        records, token = chosen.records, chosen.token
        if self._salvaging is None:
            logged = [batch.encoded for batch in chosen.batches]
            encoded = None
            if self._send_encoded and None not in logged:
                encoded = [part for parts in logged if parts is not None for part in parts]
            try:
                await self._inserter.store(records, encoded, token=token)
                return records
            except InsertDataError as exc:
                self._salvaging = self._inserter.begin_salvage(records, exc)
        salvage = self._salvaging
        await salvage.run()
        self._salvaging = None
        return salvage.stored


@dataclass(frozen=True, slots=True)
class _Batch(Generic[T]):
    """One waiting batch: its records, its encoded bytes when an insert can send them, and where it was found."""

    path: Path
    records: Sequence[T]
    encoded: Sequence[bytes] | None
    read_back: int
    """Bytes read back from the spool on disk; 0 for a batch kept in memory since it was logged."""

    @property
    def size(self) -> int:
        """Its logged bytes, for ``insert_max_bytes``: as read back, or as kept (0 when none are kept)."""
        return self.read_back or (sum(map(len, self.encoded)) if self.encoded is not None else 0)


@dataclass(slots=True)
class _Set(Generic[T]):
    """The batches of one insert, oldest first, and the insert's deduplication token."""

    batches: list[_Batch[T]]
    token: str
    records: list[T] = field(init=False)

    def __post_init__(self) -> None:
        self.records = [record for batch in self.batches for record in batch.records]

    @property
    def paths(self) -> list[Path]:
        return [batch.path for batch in self.batches]

    @property
    def from_disk(self) -> int:
        """Records read back from the spool on disk."""
        return sum(len(batch.records) for batch in self.batches if batch.read_back)


def _remove_all(spool: BatchSpool[T], paths: list[Path], intents: ReplayIntents) -> None:
    """Remove the inserted batches, then the intent naming them: a crash between leaves an intent to replay."""
    spool.remove_many(paths)
    intents.clear()
