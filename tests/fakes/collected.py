"""A consumer that keeps what it is handed, for tests of the stages that hand batches on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


class Collected(list[T]):
    """``Consumer[Sequence[T]]`` and a list: every record consumed, in order."""

    async def consume(self, batch: Sequence[T], /) -> None:
        self.extend(batch)
