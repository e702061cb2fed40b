"""The one interface between stages: a ``Consumer`` takes ownership of a batch.

Return means done (for the span writer: durable in storage). ``RetryableError``
means try later, ``PermanentError`` means never. "Not sampled" and similar
outcomes are plain returns, not errors.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

T_contra = TypeVar("T_contra", contravariant=True)


class Consumer(Protocol[T_contra]):
    async def consume(self, item: T_contra, /) -> None: ...
