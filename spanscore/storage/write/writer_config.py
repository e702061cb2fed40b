"""What one write path is tuned by: a ``BatchWriter`` and its group commits take this one object.

The numbers come from the storage config (``from_storage``) for the service's writers, and are spelled out
by the tests and the in-memory writers of offline scoring. Bad values are refused here, with the field
named, before any writer exists: a writer with ``batch_max`` 0 would never flush.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spanscore.storage.config import StorageConfig

ACKNOWLEDGE = ("stored", "spooled")


@dataclass(frozen=True, slots=True)
class WriterConfig:
    batch_max: int
    """Records per write (and per insert when the spool merges batches)."""
    flush_interval: float
    """Seconds the oldest waiting record may wait before a smaller batch is written."""
    max_pending: int
    """Records waiting in one lane beyond which new work is refused (backpressure)."""
    acknowledge: str = "stored"
    """``stored``: a batch is acknowledged once inserted; ``spooled``: once fsynced in the spool."""
    insert_interval: float = 0.0
    """Seconds between the spool replay's inserts, so their fixed engine cost is shared by many batches."""
    replay_backoff_s: float = 1.0
    cache_max_bytes: int = 256 << 20
    """Bytes of spooled batches kept in memory until inserted (``acknowledge: spooled``)."""
    read_back_max_bytes: int = 32 << 20
    """Bytes of batches read back from the spool on disk that one insert merges (one batch when larger)."""
    stuck_after_s: float = 30.0
    """Seconds of failing inserts after which ``problems()`` reports the writer."""
    bulk_min: int = 0
    """Records from which one batch takes the bulk lane; 0: no bulk lane."""
    insert_max: int = 0
    """Records per insert behind an acknowledging spool, merged from many logged batches; 0: ``batch_max``.
    Larger than ``batch_max`` because the acknowledgement does not wait for it, and the engine's fixed and merge
    costs per insert are then shared by more rows."""
    insert_max_bytes: int = 0
    """Encoded bytes (as logged) per insert behind an acknowledging spool; 0: no bound but ``insert_max``.
    Batches whose bytes are not kept count as none unless they were read back from disk."""

    def __post_init__(self) -> None:
        if self.acknowledge not in ACKNOWLEDGE:
            raise ValueError(f"acknowledge must be 'stored' or 'spooled', got {self.acknowledge!r}")
        for name in ("batch_max", "max_pending"):
            if getattr(self, name) < 1:
                raise ValueError(f"writer {name} must be at least 1, got {getattr(self, name)!r}")
        for name in (
            "flush_interval",
            "insert_interval",
            "replay_backoff_s",
            "stuck_after_s",
            "bulk_min",
            "insert_max",
            "read_back_max_bytes",
            "insert_max_bytes",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"writer {name} must not be negative, got {getattr(self, name)!r}")

    @classmethod
    def from_storage(
        cls, storage: StorageConfig, *, max_pending: int, acknowledge: str = "stored", bulk: bool = False
    ) -> WriterConfig:
        """One writer's config from the storage section; ``bulk`` when the writer has a bulk insert."""
        return cls(
            batch_max=storage.batch_max_spans,
            flush_interval=storage.flush_interval_s,
            max_pending=max_pending,
            acknowledge=acknowledge,
            insert_interval=storage.insert_interval_s,
            stuck_after_s=storage.stuck_after_s,
            bulk_min=storage.bulk_min_records if bulk else 0,
            insert_max=storage.insert_max_spans,
            insert_max_bytes=storage.insert_max_bytes,
        )

    @property
    def records_per_insert(self) -> int:
        """The most records one insert behind the spool merges."""
        return self.insert_max or self.batch_max
