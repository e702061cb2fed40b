"""The stage behind a writer's group commits: it makes one batch durable, in storage or in the spool.

``GroupCommit`` hands each batch here as a ``Consumer``; the batch is acknowledged when ``consume``
returns. With ``acknowledge="spooled"`` every batch is fsynced in the spool and the replay inserts it;
otherwise it is inserted, and when the insert fails and a spool exists it is spooled instead. While the
spool holds batches, new ones queue behind them, so storage receives everything in arrival order. A
batch the engine refuses for what it holds is salvaged row by row (``Salvager``). The bulk lane is the
same stage inserting on its own connection (``bulk``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Generic, TypeVar

from spanscore.storage.insert_errors import InsertDataError
from spanscore.storage.insert_token import BY_CONTENT
from spanscore.storage.write.inserter import Inserter
from spanscore.storage.write.replay import SpoolReplay

T = TypeVar("T")


class Durable(Generic[T]):
    """``Consumer[Sequence[T]]``: one writer's batches into storage, or into the spool its ``replay`` drains."""

    def __init__(
        self, inserter: Inserter[T], replay: SpoolReplay[T] | None, *, ack_spooled: bool, bulk: bool = False
    ) -> None:
        if ack_spooled and replay is None:
            raise ValueError("acknowledge='spooled' needs a spool")
        self._inserter = inserter
        self._replay = replay
        """The spool's replay, which owns the spool and the batches logged for a spooled acknowledgement."""
        self._ack_spooled = ack_spooled
        self._bulk = bulk

    def bulk_lane(self) -> Durable[T]:
        """The same stage for the bulk lane: its inserts use the inserter's bulk connection."""
        return Durable(self._inserter, self._replay, ack_spooled=self._ack_spooled, bulk=True)

    async def consume(self, records: Sequence[T], /) -> None:
        """Make ``records`` durable: in storage, or (when storage fails and a spool exists) on disk."""
        inserter = self._inserter
        if self._ack_spooled:
            assert self._replay is not None
            await self._to_spool(records, count=False, keep=True)
            return
        if self._replay is not None and self._replay.spool.batches:
            await self._to_spool(records)  # storage is behind its spool: keep arrival order
            return
        token = BY_CONTENT  # kept with the batch if it is spooled: an insert that failed may still have landed
        try:
            await inserter.store(records, bulk=self._bulk, token=token)
        except InsertDataError as exc:
            await self._salvage_now(records, exc)
            return
        except Exception as exc:
            await self._failed(exc, records, token=token)
            return
        inserter.recovered()
        await inserter.stored(records)

    async def _salvage_now(self, records: Sequence[T], error: InsertDataError) -> None:
        """Store a refused batch piece by piece; if storage goes away meanwhile, spool what is left."""
        salvage = self._inserter.begin_salvage(records, error)
        try:
            await salvage.run()
        except Exception as exc:
            await self._failed(exc, salvage.remaining)
        else:
            self._inserter.recovered()
        finally:
            await self._inserter.stored(salvage.stored, salvage.inserts)

    async def _failed(self, exc: Exception, records: Sequence[T], *, token: str | None = None) -> None:
        """Storage failed: spool ``records`` (under the token its insert tried), or give the failure back."""
        self._inserter.failed(exc, len(records))
        if self._replay is None:
            raise exc
        await self._to_spool(records, token=token)

    async def _to_spool(
        self, records: Sequence[T], *, count: bool = True, token: str | None = None, keep: bool = False
    ) -> None:
        """Log one batch (under ``token`` when an insert of it was tried), kept in memory for its insert if ``keep``.

        The replay is woken only once the batch is kept or known to be on disk only (``LoggedBatches``).
        """
        replay = self._replay
        assert replay is not None
        path, data = await asyncio.get_running_loop().run_in_executor(None, replay.spool.append, records, token)
        if keep:
            replay.logged.keep(path, records, data if self._inserter.inserts.encoded is not None else None)
        else:
            replay.logged.spilled(path)
        if count:
            self._inserter.stats.spooled += len(records)
        replay.wake()
