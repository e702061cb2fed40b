"""The record of a merged replay insert, written before the insert, so a crash cannot change the set.

The replay merges batches this process logged into one insert, under one deduplication token. After a
crash the next process has only the files, and on its own it would insert each alone, under each
file's token: blocks storage has never seen, so the merged insert's rows would be stored twice. So
before a merged insert the replay writes which files it takes and the token it sends (fsynced, then
renamed into place), and deletes this record only after the files. A process that finds it inserts
those of the files still there, under that token, before anything else: if the first insert landed,
storage drops the second; if not, the second is the first.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from spanscore.storage.insert_token import check_token
from spanscore.storage.write.spool import fsync_directory

_FILE = "replay.intent"


@dataclass(frozen=True, slots=True)
class Intent:
    files: tuple[Path, ...]
    """The batch files of the insert, oldest first: only those still on disk when read back."""
    token: str


class ReplayIntents:
    """The one intent a spool directory holds at a time (the replay makes one insert at a time)."""

    def __init__(self, directory: Path, holds: Callable[[Path], bool] = Path.exists) -> None:
        self._path = directory / _FILE
        self._holds = holds
        """Whether a batch named in the record is still waiting in the spool (a file, or a record of the log)."""

    def write(self, files: list[Path], token: str) -> None:
        """Record the insert about to be made, durably (blocking: call off the event loop)."""
        body = json.dumps({"token": check_token(token), "files": [path.name for path in files]}).encode()
        temporary = self._path.with_name(f"{_FILE}.tmp")  # a spool removes *.tmp when it opens
        with open(temporary, "wb") as handle:
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self._path)
        fsync_directory(self._path.parent)

    def read(self) -> Intent | None:
        """The insert a previous process recorded and may not have finished, or None.

        An unreadable record is an error naming the file, never skipped: skipping it could store rows twice.
        """
        try:
            body = self._path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            data = json.loads(body)
            token = check_token(data["token"])
            names = [str(name) for name in data["files"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise RuntimeError(f"the replay intent {self._path} cannot be read ({exc}); inspect it") from exc
        if any("/" in name or name.startswith(".") for name in names):
            raise RuntimeError(f"the replay intent {self._path} names files outside its spool: {names}")
        files = tuple(self._path.parent / name for name in names if self._holds(self._path.parent / name))
        return Intent(files, token)

    def clear(self) -> None:
        """The insert and its files' deletes are done (blocking)."""
        try:
            self._path.unlink()
        except FileNotFoundError:
            return
        fsync_directory(self._path.parent)
