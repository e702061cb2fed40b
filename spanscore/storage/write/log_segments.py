"""Appending to the spool log's segments with group-committed ``fdatasync``: one sync makes many appends durable.

Writers append under a lock (a ``pwrite`` at the segment's end) and get a ticket; ``wait_durable(ticket)``
returns once an ``fdatasync`` that started after that write has finished. The first waiter with no sync
running becomes the leader: it waits up to ``window`` seconds while other appends are still being written
(so they share its sync), then syncs outside the lock; everyone who wrote meanwhile waits for the next
sync, which is the group commit. A segment is preallocated (``posix_fallocate``) so an append rarely
extends the file; a full one is synced and left, and the next is created and its directory entry synced,
so a later segment never holds acknowledged data while an earlier one holds unsynced data.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from spanscore.storage.write.log_records import segment_name
from spanscore.storage.write.spool import fsync_directory

SEGMENT_BYTES = 32 << 20
"""Preallocated per segment: about a second of small spans at 100,000/s; a larger record gets its own size."""
IOV_MAX = 1024
"""Buffers per ``pwritev`` (Linux's limit)."""
COMMIT_WINDOW_S = 0.001
"""How long a sync leader waits for appends already under way to join its sync."""


class SegmentWriter:
    """The active segment and the tickets of what is written and what is durable; thread-safe."""

    def __init__(self, directory: Path, next_number: int, *, window: float = COMMIT_WINDOW_S) -> None:
        self.directory = directory
        self.number = next_number - 1
        """The active segment's number (none is open until the first append)."""
        self._window = window
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._fd: int | None = None
        self._offset = 0
        self._capacity = 0
        self._written = 0  # tickets: the count of appends written, and of those made durable
        self._durable = 0
        self._syncing = False
        self._retired: list[int] = []  # descriptors of full segments, closed once no sync uses them
        self.writing = 0
        """Appends reserved and not yet written: a leader waits for them (``reserve`` / ``append``)."""

    @property
    def lock(self) -> threading.Lock:
        return self._lock

    def reserve(self) -> None:
        """Call under ``lock``: an append is on its way (its bytes are being encoded)."""
        self.writing += 1

    def unreserve(self) -> None:
        """Call under ``lock``: the append announced by ``reserve`` is written (or given up)."""
        self.writing -= 1
        self._changed.notify_all()

    def append(self, parts: Sequence[bytes | memoryview]) -> tuple[int, int, int]:
        """Write one framed record's buffers after the last, in one ``pwritev``. Call under ``lock``.

        Returns (segment number, offset, ticket).
        """
        size = sum(map(len, parts))
        if self._fd is None or self._offset + size > self._capacity:
            self._roll(size)
        assert self._fd is not None
        offset = self._offset
        written = 0
        for at in range(0, len(parts), IOV_MAX):  # a batch of a million spans is 2,000 buffers; a call takes 1,024
            written += os.pwritev(self._fd, parts[at : at + IOV_MAX], offset + written)
        if written != size:
            raise OSError(f"short write to the spool log ({written} of {size} bytes)")
        self._offset += size
        self._written += 1
        return self.number, offset, self._written

    def _roll(self, needed: int) -> None:
        """Close off the active segment (synced: what follows must never be durable before it) and open the next."""
        self._finish()
        self.number += 1
        path = self.directory / segment_name(self.number)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._capacity = max(SEGMENT_BYTES, needed)
        try:
            os.posix_fallocate(fd, 0, self._capacity)
        except OSError:
            pass  # a file system without it: appends extend the file and each sync also writes its size
        os.fsync(fd)
        fsync_directory(self.directory)
        self._fd, self._offset = fd, 0

    def _close_retired(self) -> None:
        if not self._syncing:
            for fd in self._retired:
                os.close(fd)
            self._retired.clear()

    def wait_durable(self, ticket: int) -> None:
        """Return once the append with ``ticket`` and all before it are on disk (blocking)."""
        with self._changed:
            while self._durable < ticket:
                if self._syncing:
                    self._changed.wait()
                    continue
                self._lead()

    def _lead(self) -> None:
        """Sync for everyone written so far (called holding the lock; releases it during the wait and the sync)."""
        self._syncing = True
        try:
            deadline = time.monotonic() + self._window
            while self.writing and (left := deadline - time.monotonic()) > 0:
                self._changed.wait(left)
            target, fd = self._written, self._fd
            self._lock.release()
            try:
                if fd is not None:
                    os.fdatasync(fd)
            finally:
                self._lock.acquire()
            self._durable = max(self._durable, target)
        finally:
            self._syncing = False
            self._close_retired()
            self._changed.notify_all()

    def _finish(self) -> None:
        """Sync the active segment, give back its unused preallocated tail, and stop appending to it (under lock)."""
        if self._fd is not None:
            os.fdatasync(self._fd)
            self._durable = self._written
            os.ftruncate(self._fd, self._offset)  # not synced: a tail that comes back is cut on recovery
            self._retired.append(self._fd)
            self._fd = None
        self._close_retired()
        self._changed.notify_all()

    def close(self) -> None:
        with self._lock:
            self._finish()
