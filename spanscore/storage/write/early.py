"""Batches handed on when their spooled acknowledgement is given, before their insert (``acknowledge: spooled``).

Behind a spooled acknowledgement a batch waits for the replay's next insert (up to ``insert_interval_s``, plus
the insert itself) before the next stage hears of it, and the run assembler's quiet period only starts then: the
default mode scored runs about 0.4 s later than ``acknowledge: stored`` at the same rate (#43). So the writer
offers each logged batch to an ``EarlyIntake`` as soon as it is acknowledged, and tells it which batches its
inserts stored. The intake says what it took: a batch it declined (its queue full, too much taken and not yet
stored) is handed on after its insert, as before, and so is a batch whose intake changed in between (live scoring
restarted), since the new one never saw it. What the intake took is never handed on twice.

The intake keeps the promise that a run is scored only from spans that can be read back: it holds a run until
every batch it took with the run's spans is stored (``RunAssembler.batches_inserted``).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class EarlyIntake(Protocol[T_contra]):
    def take(self, records: Sequence[T_contra], batch: Hashable, /) -> bool:
        """Take a batch just acknowledged from the spool, not inserted yet; False to have it handed on once stored.

        Called on the event loop in the acknowledgement's path: it must not wait.
        """
        ...

    async def inserted(self, batches: Sequence[Hashable], /) -> Collection[Hashable]:
        """These batches are stored now; returns those of them it took (the writer hands on the others)."""
        ...


class EarlyRelay(Generic[T]):
    """An ``EarlyIntake`` for a stage that may start later: declines every batch while nothing is connected."""

    def __init__(self) -> None:
        self._target: EarlyIntake[T] | None = None

    def connect(self, target: EarlyIntake[T] | None) -> None:
        self._target = target

    def take(self, records: Sequence[T], batch: Hashable, /) -> bool:
        return self._target is not None and self._target.take(records, batch)

    async def inserted(self, batches: Sequence[Hashable], /) -> Collection[Hashable]:
        return () if self._target is None else await self._target.inserted(batches)
