"""``replay_kill_child`` with a memory bound of one batch: the merged insert killed before its delete is of
batches read back from the spool on disk, not (only) of batches kept in memory."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from tests.e2e import replay_kill_child as child

_writer = child._writer


def _small_memory(kind: str, store: Any, settings: dict[str, Any]) -> Any:
    writer = _writer(kind, store, settings)
    if writer._replay is not None:
        writer._replay.logged._max_bytes = settings.get("keep_bytes", 1)
    return writer


child._writer = _small_memory  # type: ignore[assignment]

if __name__ == "__main__":
    role, kind, raw = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    asyncio.run(child.first(kind, raw) if role == "first" else child.successor(kind, raw))
