"""Where one writer's batches go into storage: the seams an ``Inserter`` inserts through.

Each is a ``Consumer``: ``rows`` takes a batch of records, ``encoded`` the spool codec's bytes of one or
more batches as they were written to the log, sent as one insert (used behind ``acknowledge: spooled``),
``bulk`` a large batch on a connection of its own. The tests put storage down by replacing one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from spanscore.pipeline import Consumer

T = TypeVar("T")


@dataclass(slots=True)
class Inserts(Generic[T]):
    rows: Consumer[Sequence[T]]
    encoded: Consumer[Sequence[bytes]] | None = None
    bulk: Consumer[Sequence[T]] | None = None
