"""What the API and the CLI do with dead letters: list them, replay them, and say whether the write path is healthy.

Replay sends an entry's rows through the writer they came from, so they take the
same path as new data: stored, spooled while storage is down, or (if the engine
still refuses them) dead-lettered again under a new entry. The old entry is
removed only after that, so a replay interrupted by a crash leaves it in place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spanscore.errors import PermanentError
from spanscore.storage.write.writer import BatchWriter

WritersFn = Callable[[], Sequence[BatchWriter[Any]]]


class DeadLetterOps:
    """Dead-letter listing, replay and health over a set of writers."""

    def __init__(self, writers: WritersFn) -> None:
        self._writers = writers

    def health(self) -> list[str]:
        """Why the write path is degraded; empty when it is healthy."""
        return [problem for writer in self._writers() for problem in writer.problems()]

    def entries(self) -> list[dict[str, Any]]:
        found = []
        for writer in self._writers():
            dead = writer.salvager.dead_letters
            if dead is not None:
                found += [entry.as_dict() for entry in dead.entries()]
        return found

    async def replay(self, writer_name: str | None = None, entry_id: str | None = None) -> dict[str, Any]:
        """Replay every entry (of one writer, or one entry); returns what was replayed and what is left."""
        chosen = [w for w in self._writers() if writer_name in (None, w.name)]
        if writer_name is not None and not chosen:
            names = ", ".join(w.name for w in self._writers())
            raise PermanentError(f"no writer named {writer_name!r}; dead letters are kept for {names}")
        replayed: list[dict[str, Any]] = []
        for writer in chosen:
            replayed += await _replay_writer(writer, entry_id)
        if entry_id is not None and not replayed:
            raise PermanentError(f"no dead-letter entry {entry_id!r}; `spanscore deadletter list` shows them")
        return {"replayed": replayed, "problems": self.health()}


async def _replay_writer(writer: BatchWriter[Any], entry_id: str | None) -> list[dict[str, Any]]:
    dead = writer.salvager.dead_letters
    if dead is None:
        return []
    done = []
    for entry in dead.entries():
        if entry_id is not None and entry.id != entry_id:
            continue
        await writer.consume(dead.read(entry.id))
        dead.remove(entry.id)
        done.append({"writer": writer.name, "id": entry.id, "records": entry.records})
    return done
