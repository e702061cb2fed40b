"""``spanscore deadletter`` when no service runs: read the spool directory, replay through a write path of its own.

The running service is asked first (it owns the embedded store); these functions
are the fallback, as ``spanscore query`` falls back to opening the store itself.
"""

from __future__ import annotations

import json
import time
from typing import Any

from spanscore.config import ServiceConfig
from spanscore.errors import SpanscoreError
from spanscore.storage.write import paths as write_paths
from spanscore.storage.write.deadletter_ops import DeadLetterOps
from spanscore.storage.write.writer import BatchWriter


def list_locally(config: ServiceConfig) -> dict[str, Any]:
    entries = []
    for dead in write_paths.open_dead_letters(config.storage.spool_dir).values():
        entries += [entry.as_dict() for entry in dead.entries()]
    return {"entries": entries, "problems": []}


async def replay_locally(config: ServiceConfig, payload: dict[str, str | None]) -> dict[str, Any]:
    from spanscore.storage.clickhouse import ClickHouseStore

    store = ClickHouseStore.from_config(config.storage)
    try:
        store.open()
    except Exception as exc:
        raise SpanscoreError(f"cannot open storage {config.storage.dsn}: {exc}") from None
    writers: list[BatchWriter[Any]] = [
        write_paths.span_writer(store, config.storage),
        write_paths.log_writer(store, config.storage),
        write_paths.score_writer(store, config.storage),
        write_paths.decision_writer(store, config.storage),
    ]
    try:
        for writer in writers:
            await writer.start()
        return await DeadLetterOps(lambda: writers).replay(payload.get("writer"), payload.get("id"))
    finally:
        for writer in writers:
            await writer.shutdown()
        store.close()


def format_listing(listing: dict[str, Any], output: str) -> str:
    if output == "json":
        return json.dumps(listing, indent=2, sort_keys=True) + "\n"
    entries = listing.get("entries", [])
    lines = [f"{len(entries)} dead-lettered batch{'es' if len(entries) != 1 else ''}"]
    for entry in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(entry["dead_at"]))
        lines.append(f"{entry['writer']:<9} {entry['id']}  {entry['records']:>6} rows  {when}Z  {entry['reason']}")
    lines += [f"degraded: {problem}" for problem in listing.get("problems", [])]
    return "\n".join(lines) + "\n"
