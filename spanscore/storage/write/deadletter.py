"""Dead letters: rows the engine refused for what they hold, kept on disk with the engine's reason.

The write path never retries such rows forever (that would stop every batch behind
them) and never drops them silently: after splitting a refused batch down to the rows
that still fail, it writes those here, one file per refusal, and goes on. Each file is
one JSON header line (writer, reason, engine code, row count, time) followed by the
rows in the writer's spool encoding, fsynced and renamed like a spool batch. ``spanscore
deadletter list`` shows them; ``replay`` sends them through the write path again, which
removes a file once its rows are stored (or written back here if refused again).
While files are here ``/healthz`` reports the service as degraded.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson

from spanscore.storage.write.spool import SpoolCodec, fsync_directory

T = TypeVar("T")

_NAME = re.compile(r"^(\d{12})\.dead$")


@dataclass(frozen=True, slots=True)
class DeadLetterEntry:
    """One refusal: which rows (by count), which writer, and the engine's reason."""

    id: str
    writer: str
    reason: str
    code: int | None
    records: int
    dead_at: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class DeadLetters(Generic[T]):
    """A directory of dead-letter files for one writer; thread-safe (called from worker threads)."""

    def __init__(self, directory: Path, writer: str, codec: SpoolCodec[T] | None = None) -> None:
        self.directory = directory
        self.writer = writer
        self.codec: SpoolCodec[T] = codec or SpoolCodec()
        directory.mkdir(parents=True, exist_ok=True)
        for leftover in directory.glob("*.tmp"):
            leftover.unlink()
        self._lock = threading.Lock()
        files = self._files()
        self._next = int(files[-1].name[:12]) + 1 if files else 1
        self._batches = len(files)
        self._records = sum(entry.records for entry in self.entries())

    def _files(self) -> list[Path]:
        return sorted(p for p in self.directory.iterdir() if _NAME.match(p.name))

    @property
    def batches(self) -> int:
        return self._batches

    @property
    def records(self) -> int:
        return self._records

    def add(self, records: Sequence[T], reason: str, code: int | None = None) -> DeadLetterEntry:
        """Keep ``records`` durably with ``reason``; returns the new entry."""
        body = self.codec.encode(records)
        with self._lock:
            entry = DeadLetterEntry(f"{self._next:012d}", self.writer, reason, code, len(records), time.time())
            self._next += 1
            target = self.directory / f"{entry.id}.dead"
            temporary = target.with_suffix(".tmp")
            with open(temporary, "wb") as handle:
                handle.write(orjson.dumps(entry.as_dict()) + b"\n" + body)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
            fsync_directory(self.directory)
            self._batches += 1
            self._records += len(records)
        return entry

    def entries(self) -> list[DeadLetterEntry]:
        """Every entry, oldest first (headers only)."""
        found = []
        for path in self._files():
            with open(path, "rb") as handle:
                found.append(DeadLetterEntry(**orjson.loads(handle.readline())))
        return found

    def read(self, entry_id: str) -> list[T]:
        """The rows of one entry; KeyError when there is no such entry."""
        path = self._path(entry_id)
        data = path.read_bytes()
        return self.codec.decode(data[data.index(b"\n") + 1 :])

    def remove(self, entry_id: str) -> None:
        path = self._path(entry_id)
        with self._lock:
            with open(path, "rb") as handle:
                count = int(orjson.loads(handle.readline())["records"])
            path.unlink()
            fsync_directory(self.directory)
            self._batches -= 1
            self._records -= count

    def _path(self, entry_id: str) -> Path:
        path = self.directory / f"{entry_id}.dead"
        if not _NAME.match(path.name) or not path.exists():
            raise KeyError(f"no dead-letter entry {entry_id!r} for {self.writer} in {self.directory}")
        return path
