"""The write-ahead spool as an append-only log: one ``fdatasync`` per group of batches instead of four syscalls each.

The file-per-batch ``Spool`` made every batch durable with a new file, its fsync, a rename and an fsync of
the directory: a p99 of 32-106 ms on a loaded machine (issue #43). Here every batch is one framed record
appended to a preallocated segment (``log_records``) and acknowledged after a group-committed
``fdatasync`` (``log_segments``); concurrent appends share one sync. A batch whose insert succeeded is
marked by a ``DONE`` record, synced the same way before ``remove`` returns (so a replay intent is cleared
only after its batches are marked), and a segment is deleted once it and every older one hold no waiting
batch: a ``DONE`` record is then never deleted before the batch it marks.

A batch is named as before, ``NNNNNNNNNNNN-<token>.batch`` under the spool's directory, but the name is
a handle, not a file: the replay, its intents and the in-memory ``LoggedBatches`` keep using it. On open
the segments are scanned; a record that fails its checksum ends its segment (a torn tail, never
acknowledged) and the rest is cut off. Batch files left by a version that wrote one file per batch are
read through a ``Spool`` over the same directory and replayed first, being older; new batches are
numbered after them.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Generic, TypeVar

from spanscore.storage.insert_token import check_token, new_token
from spanscore.storage.write import log_records as records_on_disk
from spanscore.storage.write.log_records import BATCH, DONE, done_payload, done_sequences, frame, segment_name
from spanscore.storage.write.log_segments import COMMIT_WINDOW_S, SegmentWriter
from spanscore.storage.write.spool import Spool, SpoolCodec, batch_name, check_room, free_bytes, parse_name

T = TypeVar("T")
_LOCK = "spool.lock"


@dataclass(frozen=True, slots=True)
class _Entry:
    segment: int
    offset: int
    length: int
    token: str


class SpoolLog(Generic[T]):
    """``Spool``'s interface over an append-only log; thread-safe (the writer calls it from worker threads)."""

    def __init__(
        self,
        directory: Path,
        max_bytes: int,
        codec: SpoolCodec[T] | None = None,
        *,
        min_free_bytes: int = 0,
        commit_window: float = COMMIT_WINDOW_S,
    ) -> None:
        self.codec: SpoolCodec[T] = codec or SpoolCodec()
        self.directory = directory
        self.max_bytes = max_bytes
        self.min_free_bytes = min_free_bytes
        directory.mkdir(parents=True, exist_ok=True)
        self._held = _hold(directory)
        self._files = Spool(directory, max_bytes, self.codec, min_free_bytes=min_free_bytes)
        """Batches written one file each by an earlier version: replayed first, never written to."""
        self._batches: dict[int, _Entry] = {}  # by sequence number, oldest first
        self._live: dict[int, int] = {}  # segment number -> waiting batches in it, oldest segment first
        self._bytes = 0
        last_segment, last_sequence = self._recover()
        self._next = max(last_sequence + 1, self._files.next_number)
        self._log = SegmentWriter(directory, last_segment + 1, window=commit_window)
        self._removing = threading.Lock()

    def _recover(self) -> tuple[int, int]:
        """Index the waiting batches of every segment, cut torn tails; returns the last segment and sequence."""
        last_segment = last_sequence = 0
        done: set[int] = set()
        for path in sorted(self.directory.glob(f"*{records_on_disk.SEGMENT_SUFFIX}")):
            number = records_on_disk.segment_number(path)
            if number is None:
                continue
            found, end = records_on_disk.scan(path)
            records_on_disk.cut(path, end)
            last_segment = number
            self._live[number] = 0
            for record in found:
                last_sequence = max(last_sequence, record.sequence)
                if record.kind == DONE:
                    done.update(done_sequences(record.payload or b""))
                elif record.kind == BATCH:
                    self._batches[record.sequence] = _Entry(number, record.offset, record.length, record.token)
        for sequence in done:
            self._batches.pop(sequence, None)
        for entry in self._batches.values():
            self._live[entry.segment] += 1
            self._bytes += entry.length
        self._drop_empty_segments(keep=None)
        return last_segment, last_sequence

    @property
    def batches(self) -> int:
        return self._files.batches + len(self._batches)

    @property
    def size_bytes(self) -> int:
        return self._files.size_bytes + self._bytes

    @property
    def next_number(self) -> int:
        """The number the next batch gets: batches numbered below it at open were logged by an earlier process."""
        with self._log.lock:
            return self._next

    def append(self, records: Sequence[T], token: str | None = None) -> tuple[Path, list[bytes]]:
        """Log one batch durably; return its handle and the parts written, or raise RetryableError when full.

        A batch written but not synced when the sync fails is not acknowledged: its exports are refused and their
        exporters retry them. This process then never inserts it (it is dropped from the waiting batches and a
        DONE record for it is written, unsynced), or storage would keep it beside the retry, a batch under a token
        of its own. Only a crash before that record reaches the disk leaves it to the next start.
        """
        token = new_token() if token is None else check_token(token)
        log = self._log
        with log.lock:
            log.reserve()  # from here a sync leader waits (briefly) for this batch to share its sync
        try:
            parts = self.codec.parts(records)
            written = self.codec.layout(parts)
            size = sum(map(len, written))
            free = free_bytes(self.directory, self.min_free_bytes)
            with log.lock:
                check_room(self, self.size_bytes, size, free)
                sequence = self._next
                self._next += 1
                segment, offset, ticket = log.append(frame(BATCH, sequence, token, written))
                self._batches[sequence] = _Entry(segment, offset + records_on_disk.HEADER.size, size, token)
                self._live[segment] = self._live.get(segment, 0) + 1
                self._bytes += size
        finally:
            with log.lock:
                log.unreserve()
        try:
            log.wait_durable(ticket)
        except BaseException:
            self._refused(sequence)
            raise
        return self.directory / batch_name(sequence, token), parts

    def _refused(self, sequence: int) -> None:
        """A batch whose sync failed (not acknowledged): no longer waiting, and marked done on disk if it can be."""
        with self._log.lock:
            if not self._unlist(sequence):
                return
            with contextlib.suppress(OSError):  # the disk failing is why it was refused; a later sync may carry it
                segment, _, _ = self._log.append(frame(DONE, 0, None, [done_payload([sequence])]))
                self._live.setdefault(segment, 0)

    def waiting(self, limit: int) -> list[Path]:
        """Up to ``limit`` batches, oldest first: those of the file-per-batch spool, then the log's."""
        older = self._files.waiting(limit)
        with self._log.lock:
            newer = list(itertools.islice(self._batches.items(), max(0, limit - len(older))))
        return older + [self.directory / batch_name(sequence, entry.token) for sequence, entry in newer]

    @staticmethod
    def token(path: Path) -> str:
        return Spool.token(path)

    def _entry(self, path: Path) -> tuple[int, _Entry] | None:
        sequence, token = parse_name(path.name)
        entry = self._batches.get(sequence) if path.parent == self.directory else None
        return None if entry is None or entry.token != token else (sequence, entry)

    def holds(self, path: Path) -> bool:
        """Whether the batch named ``path`` is still waiting (in the log or as a file of the older spool)."""
        with self._log.lock:
            found = self._entry(path) is not None
        return found or self._files.holds(path)

    def read(self, path: Path) -> list[T]:
        records: list[T] = self.codec.decode(self.read_encoded(path))
        return records

    def read_encoded(self, path: Path) -> bytes:
        """The batch's bytes as the codec wrote them (an insert can send them as they are)."""
        with self._log.lock:
            found = self._entry(path)
        if found is None:
            return self._files.read_encoded(path)
        entry = found[1]
        return records_on_disk.read_payload(self.directory / segment_name(entry.segment), entry.offset, entry.length)

    def remove(self, path: Path) -> None:
        self.remove_many([path])

    def remove_many(self, paths: Sequence[Path]) -> None:
        """Mark inserted batches done, durably, in one record; files of the older spool are deleted."""
        with self._removing:  # one DONE record at a time, so segments are dropped in order
            with self._log.lock:
                found = [(path, self._entry(path)) for path in paths]
            logged = [pair for _, pair in found if pair is not None]
            for path, pair in found:
                if pair is None:
                    self._files.remove(path)
            if not logged:
                return
            log = self._log
            with log.lock:
                segment, _, ticket = log.append(frame(DONE, 0, None, [done_payload([s for s, _ in logged])]))
                self._live.setdefault(segment, 0)  # a segment of DONE records only is dropped in its turn too
            log.wait_durable(ticket)
            with log.lock:
                for sequence, _ in logged:
                    self._unlist(sequence)
                self._drop_empty_segments(keep=log.number)

    def _unlist(self, sequence: int) -> bool:
        """Drop a batch from the waiting ones and from its segment's count (under the log's lock); False if gone."""
        entry = self._batches.pop(sequence, None)
        if entry is None:
            return False
        self._live[entry.segment] -= 1
        self._bytes -= entry.length
        return True

    def _drop_empty_segments(self, keep: int | None) -> None:
        """Delete the oldest segments while they hold no waiting batch (never the one being appended to)."""
        for number in list(self._live):
            if self._live[number] or number == keep:
                return
            del self._live[number]
            (self.directory / segment_name(number)).unlink(missing_ok=True)

    def close(self) -> None:
        """Sync and close the active segment and let another process open the log (a writer's shutdown)."""
        self._log.close()
        self._held.close()


def waiting_batches(directory: Path) -> int:
    """How many batches a spool directory holds, for a process that does not write it (no writer may have it open)."""
    log: SpoolLog[object] = SpoolLog(directory, max_bytes=1 << 62)
    try:
        return log.batches
    finally:
        log.close()


def _hold(directory: Path) -> BinaryIO:
    """Lock the log's directory for this instance: two writers appending to one log would corrupt it."""
    handle = open(directory / _LOCK, "ab")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise RuntimeError(
            f"the spool {directory} is in use by another writer (another `spanscore serve` with the same "
            "storage.spool_dir?): give each process a spool directory of its own"
        ) from None
    return handle
