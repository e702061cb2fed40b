"""Test doubles that ship with the package, so tests of every stage share them.

Sinks implement ``Consumer``: one records what it gets, one always raises the
error it was given (to walk ok -> retryable -> permanent -> ok), one drops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class RecordingSink(Generic[T]):
    def __init__(self) -> None:
        self.batches: list[list[T]] = []
        self.error: BaseException | None = None

    @property
    def items(self) -> list[T]:
        return [item for batch in self.batches for item in batch]

    async def consume(self, batch: Sequence[T], /) -> None:
        if self.error is not None:
            raise self.error
        self.batches.append(list(batch))


class RaisingSink(Generic[T]):
    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def consume(self, batch: Sequence[T], /) -> None:
        raise self.error


class DroppingSink(Generic[T]):
    def __init__(self) -> None:
        self.dropped = 0

    async def consume(self, batch: Sequence[T], /) -> None:
        self.dropped += len(batch)
