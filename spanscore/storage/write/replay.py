"""The spool's way into storage: oldest batch first, a file deleted only after its insert succeeded.

It runs whenever the spool holds batches: behind an acknowledging spool (``acknowledge: spooled``) all
the time, otherwise only after a failed insert put batches there (and after a restart found some).
Batches this process logged are still in memory (``LoggedBatches``) and are merged into inserts of up
to ``records_per_insert`` records; a batch read back from disk goes alone, and a failed set is retried exactly
as it was. A set the engine refuses for its content is salvaged, and the salvage resumes on the retry
after an outage.

Every insert carries a deduplication token (``spanscore.storage.insert_token``): a single batch its
own, kept in its file's name; a merged set a new one, recorded with the set's files in a replay intent
(``replay_intent``) before the insert. A retry, in this process or after a crash between the insert and
the deletes, sends the same files under the same token, so storage keeps one copy.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
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


class SpoolReplay(Generic[T]):
    def __init__(
        self,
        spool: BatchSpool[T],
        inserter: Inserter[T],
        logged: LoggedBatches[T],
        config: WriterConfig,
        *,
        join_encoded: Callable[[list[bytes]], bytes] | None,
    ) -> None:
        self.spool = spool
        """The write-ahead log this replay drains (the writer's ``Durable`` stage appends to it)."""
        self._inserter = inserter
        self.logged = logged
        """Batches logged for a spooled acknowledgement, kept in memory until inserted."""
        self._insert_max = config.records_per_insert
        self._linger_enabled = config.acknowledge == "spooled"
        self._insert_interval = config.insert_interval
        self._backoff = config.replay_backoff_s
        self._join_encoded = join_encoded
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
            if not await self._replay_some():
                if self.closing:
                    return
                await asyncio.sleep(self._backoff)

    async def _linger(self) -> None:
        """Space inserts behind an acknowledging spool ``insert_interval`` apart.

        Every insert has a fixed engine cost (tens of milliseconds of CPU in chDB, whatever its
        size), so back-to-back inserts of whatever just arrived would take CPU from the receivers
        at moderate rates. Waiting lets batches merge; a full ``records_per_insert`` or shutdown goes at once.
        """
        if not self._linger_enabled or self._retry:
            return
        await wait_while(
            self._spooled,
            self._last_insert + self._insert_interval,
            lambda: not self.closing and self.logged.count < self._insert_max,
        )

    async def _next(self) -> tuple[list[Path], str, list[T], int]:
        """The batch files for the next insert, its token, their records, and how many of those came from disk."""
        loop = asyncio.get_running_loop()
        spool = self.spool
        taken: list[Path] = []
        records: list[T] = []
        from_disk = 0
        if self._retry:
            taken, token = list(self._retry[0]), self._retry[1]
            for path in taken:
                batch = self.logged.records(path)
                if batch is None:
                    batch = await loop.run_in_executor(None, spool.read, path)
                    from_disk += len(batch)
                records.extend(batch)
            return taken, token, records, from_disk
        for path in await loop.run_in_executor(None, spool.waiting, 256):
            batch = self.logged.records(path)
            if batch is None:  # read back from disk: it goes alone
                if not taken:
                    records = await loop.run_in_executor(None, spool.read, path)
                    return [path], spool.token(path), records, len(records)
                break
            if taken and len(records) + len(batch) > self._insert_max:
                break
            taken.append(path)
            records.extend(batch)
        token = spool.token(taken[0]) if len(taken) == 1 else new_token()
        return taken, token, records, 0

    async def _replay_some(self) -> bool:
        """Insert the oldest waiting batches as one insert of at most ``records_per_insert``; False if it failed."""
        loop = asyncio.get_running_loop()
        taken, token, records, from_disk = await self._next()
        if not taken:
            return True
        self._last_insert = time.monotonic()
        try:
            if len(taken) > 1:  # recorded again on a retry: the same set, and a failed write is retried too
                await loop.run_in_executor(None, self._intents.write, taken, token)
            stored = await self._insert_taken(taken, records, token)
        except Exception as exc:
            self._inserter.failed(exc, len(records))
            self._retry = (taken, token)
            return False
        self._inserter.recovered()
        self._retry = None
        await loop.run_in_executor(None, _remove_all, self.spool, taken, self._intents)
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

    async def _insert_taken(self, taken: list[Path], records: list[T], token: str) -> Sequence[T]:
        """Insert the batches ``taken`` under ``token``; returns the records now stored.

        A refused set is salvaged, and a salvage interrupted by an outage resumes on the retry
        of the same set instead of starting over.
        """
        if self._salvaging is None:
            encoded = [self.logged.encoded(path) for path in taken]
            joined = None
            if self._join_encoded is not None and None not in encoded:
                joined = self._join_encoded([data for data in encoded if data is not None])
            try:
                await self._inserter.store(records, joined, token=token)
                return records
            except InsertDataError as exc:
                self._salvaging = self._inserter.begin_salvage(records, exc)
        salvage = self._salvaging
        await salvage.run()
        self._salvaging = None
        return salvage.stored


def _remove_all(spool: BatchSpool[T], paths: list[Path], intents: ReplayIntents) -> None:
    """Remove the inserted batches, then the intent naming them: a crash between leaves an intent to replay."""
    spool.remove_many(paths)
    intents.clear()
