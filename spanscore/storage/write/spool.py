"""Write-ahead spool: batches storage could not take, kept on local disk and replayed in order.

When an insert fails, the span writer appends the batch here and only then
acknowledges the export, so an acknowledged span is always either in storage or
in the spool. Each batch is one file, written to a temporary name, fsynced and
renamed, so a crash leaves whole batches or nothing. Files are numbered; the
replay takes the lowest number first and deletes a file only after its insert
succeeded. The spool is bounded: past ``max_bytes`` it refuses, and the writer
answers with backpressure instead.

A file's name also holds its batch's insert deduplication token (``NNNNNNNNNNNN-<token>.batch``,
see ``spanscore.storage.insert_token``): a crash after an insert and before the delete replays the
batch with the token its first insert carried, and storage drops it. The number cannot serve: it
starts again at 1 whenever the directory empties. Files from before tokens are renamed to carry one
when a spool opens.

The same files serve as the write-ahead log when the writer acknowledges on
spool (``storage.acknowledge: spooled``): every batch passes through here, so a
codec that is cheap both ways matters (see ``SpoolCodec``).
"""

from __future__ import annotations

import os
import pickle
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from spanscore.errors import RetryableError
from spanscore.storage.insert_token import TOKEN_PATTERN, check_token, new_token

T = TypeVar("T")

_NAME = re.compile(rf"^(\d{{12}})(?:-({TOKEN_PATTERN}))?\.batch$")


def batch_name(number: int, token: str) -> str:
    """The name of a spooled batch: its number, then its insert deduplication token."""
    return f"{number:012d}-{token}.batch"


def parse_name(name: str) -> tuple[int, str]:
    """(number, token) of a batch named by ``batch_name``; ValueError for any other name."""
    match = _NAME.match(name)
    if match is None or match.group(2) is None:
        raise ValueError(f"{name} is not a spool batch named with its token")
    return int(match.group(1)), match.group(2)


def _pickle_encode(records: Sequence[Any]) -> bytes:
    return pickle.dumps(list(records), protocol=pickle.HIGHEST_PROTOCOL)


def _pickle_decode(data: bytes) -> list[Any]:
    records: list[Any] = pickle.loads(data)  # written by this process family only, never by a client
    return records


@dataclass(frozen=True, slots=True)
class SpoolCodec(Generic[T]):
    """How a batch becomes file bytes and back; pickle unless the record type has a faster form."""

    encode: Callable[[Sequence[T]], bytes] = _pickle_encode
    decode: Callable[[bytes], list[T]] = _pickle_decode
    encode_parts: Callable[[Sequence[T]], list[bytes]] | None = None
    """``encode`` in parts, for a form whose encoded batches join without decoding (``pieces``)."""
    pieces: Callable[[Sequence[bytes]], Sequence[bytes | memoryview]] | None = None
    """What, written one after another, makes several parts (one batch's, or several batches') one encoded batch:
    the spool writes a batch's parts so, without joining them into a new object first (a copy of megabytes
    with the GIL held, #43); an insert of logged batches joins their parts once, at the store."""
    joinable: Callable[[bytes], bool] = lambda data: True
    """Whether bytes read back from disk are in the form ``pieces`` takes (an older version may have written
    another); batches that are not are encoded again for their insert."""

    def parts(self, records: Sequence[T]) -> list[bytes]:
        """The batch encoded, in the parts ``layout`` writes."""
        return self.encode_parts(records) if self.encode_parts is not None else [self.encode(records)]

    def layout(self, parts: Sequence[bytes]) -> Sequence[bytes | memoryview]:
        """The buffers to write for ``parts``: their bytes are ``encode``'s for the batch they hold."""
        return parts if len(parts) == 1 or self.pieces is None else self.pieces(parts)


class _Bounded(Protocol):
    directory: Path
    max_bytes: int
    min_free_bytes: int


def free_bytes(directory: Path, min_free_bytes: int) -> int | None:
    """Bytes free for the spool's directory, or None when no free space is kept (``min_free_bytes`` 0)."""
    if not min_free_bytes:
        return None
    stat = os.statvfs(directory)
    return stat.f_bavail * stat.f_frsize


def check_room(spool: _Bounded, used: int, size: int, free: int | None) -> None:
    """Refuse (``RetryableError``) a batch of ``size`` bytes that would pass the spool's bound or its disk's floor."""
    if used + size > spool.max_bytes:
        raise RetryableError(
            f"the spool is full: storage is behind or unavailable ({used} of {spool.max_bytes} bytes)",
            retry_after=5.0,
        )
    if free is not None and free - size < spool.min_free_bytes:
        raise RetryableError(
            f"the spool's disk is nearly full ({free} bytes free at "
            f"{spool.directory}; the spool leaves {spool.min_free_bytes})",
            retry_after=5.0,
        )


class Spool(Generic[T]):
    """A directory of numbered batch files; thread-safe (the writer calls it from worker threads)."""

    def __init__(
        self, directory: Path, max_bytes: int, codec: SpoolCodec[T] | None = None, *, min_free_bytes: int = 0
    ) -> None:
        self.codec: SpoolCodec[T] = codec or SpoolCodec()
        self.directory = directory
        self.max_bytes = max_bytes
        self.min_free_bytes = min_free_bytes
        """Free space the spool leaves on its disk: by default it shares the embedded store's disk, whose merges
        need room to finish; below it, exports get backpressure instead of a full disk."""
        directory.mkdir(parents=True, exist_ok=True)
        for leftover in directory.glob("*.tmp"):
            leftover.unlink()  # a batch whose write never finished was never acknowledged
        self._lock = threading.Lock()
        self._writing = 0  # names the temporary file of each batch being written
        _give_tokens(directory, self._files())
        files = self._files()
        self._next = int(_NAME.match(files[-1].name).group(1)) + 1 if files else 1  # type: ignore[union-attr]
        self._bytes = sum(f.stat().st_size for f in files)
        self._count = len(files)

    def _files(self) -> list[Path]:
        return sorted(p for p in self.directory.iterdir() if _NAME.match(p.name))

    @property
    def batches(self) -> int:
        return self._count

    @property
    def next_number(self) -> int:
        """The number the next batch file would get: a log over the same directory numbers after it."""
        return self._next

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def append(self, records: Sequence[T], token: str | None = None) -> tuple[Path, list[bytes]]:
        """Persist one batch durably; return its file and the parts written, or raise RetryableError when full.

        ``token`` is the batch's insert deduplication token when an insert of it was already tried (a new
        one otherwise). The parts let a writer insert the batch as it was logged instead of encoding it again.
        """
        token = new_token() if token is None else check_token(token)
        parts = self.codec.parts(records)
        written = self.codec.layout(parts)
        size = sum(map(len, written))
        free = free_bytes(self.directory, self.min_free_bytes)  # a syscall: before the lock, which guards the count
        with self._lock:
            check_room(self, self._bytes, size, free)
            self._bytes += size  # reserved while it is written
            self._writing += 1
            temporary = self.directory / f"writing-{self._writing:012d}.tmp"
        # Written and fsynced outside the lock: a large batch's write does not hold up a small one's.
        try:
            with open(temporary, "wb") as handle:
                for buffer in written:
                    handle.write(buffer)
                handle.flush()
                os.fsync(handle.fileno())
            with self._lock:  # numbered when complete, so the files' order is the order they became durable
                target = self.directory / batch_name(self._next, token)
                self._next += 1
                os.replace(temporary, target)
                fsync_directory(self.directory)
                self._count += 1
        except BaseException:
            with self._lock:
                self._bytes -= size
            temporary.unlink(missing_ok=True)
            raise
        return target, parts

    def waiting(self, limit: int) -> list[Path]:
        """Up to ``limit`` batch files, oldest first."""
        with self._lock:
            return self._files()[:limit]

    @staticmethod
    def token(path: Path) -> str:
        """The insert deduplication token of the batch in ``path``."""
        match = _NAME.match(path.name)
        if match is None or match.group(2) is None:
            raise ValueError(f"{path} is not a spool batch file named with its token")
        return match.group(2)

    def read(self, path: Path) -> list[T]:
        records: list[T] = self.codec.decode(self.read_encoded(path))
        return records

    def read_encoded(self, path: Path) -> bytes:
        """The batch's bytes as the codec wrote them (an insert can send them as they are)."""
        return path.read_bytes()

    def holds(self, path: Path) -> bool:
        """Whether the batch named ``path`` is still waiting."""
        return path.parent == self.directory and _NAME.match(path.name) is not None and path.exists()

    def remove_many(self, paths: Sequence[Path]) -> None:
        for path in paths:
            self.remove(path)

    def close(self) -> None:
        """Nothing stays open between appends."""

    def remove(self, path: Path) -> None:
        with self._lock:
            size = path.stat().st_size
            path.unlink()
            fsync_directory(self.directory)
            self._bytes -= size
            self._count -= 1


def _give_tokens(directory: Path, files: list[Path]) -> None:
    """Rename batch files written before tokens existed so that each carries one from now on.

    A rename is atomic, so a crash leaves either name; replays after it all use the new one.
    """
    renamed = False
    for path in files:
        match = _NAME.match(path.name)
        if match is not None and match.group(2) is None:
            os.replace(path, directory / batch_name(int(match.group(1)), new_token()))
            renamed = True
    if renamed:
        fsync_directory(directory)


class BatchSpool(Protocol[T]):
    """What the write path needs of a spool: ``Spool`` (a file per batch) and ``SpoolLog`` (one log) both are."""

    codec: SpoolCodec[T]
    directory: Path

    @property
    def batches(self) -> int: ...

    @property
    def size_bytes(self) -> int: ...

    @property
    def next_number(self) -> int: ...

    def append(self, records: Sequence[T], token: str | None = None) -> tuple[Path, list[bytes]]: ...

    def waiting(self, limit: int) -> list[Path]: ...

    @staticmethod
    def token(path: Path) -> str: ...

    def holds(self, path: Path) -> bool: ...

    def read(self, path: Path) -> list[T]: ...

    def read_encoded(self, path: Path) -> bytes: ...

    def remove_many(self, paths: Sequence[Path]) -> None: ...

    def close(self) -> None: ...


def fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
