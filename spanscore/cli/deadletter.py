"""``spanscore deadletter`` when no service runs: read the spool directory, replay through a write path of its own.

The running service is asked first (it owns the embedded store); these functions
are the fallback, as ``spanscore query`` falls back to opening the store itself.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from spanscore.cli.reach import api_url, refuse_store_held_elsewhere, unopenable
from spanscore.config import ServiceConfig
from spanscore.errors import SpanscoreError
from spanscore.storage.write import paths as write_paths
from spanscore.storage.write.deadletter_ops import DeadLetterOps
from spanscore.storage.write.writer import BatchWriter


def list_locally(config: ServiceConfig) -> dict[str, Any]:
    """The spool's dead letters, read where they are; a missing spool is named, never created."""
    spool = Path(config.storage.spool_dir)
    if not spool.is_dir():
        raise SpanscoreError(
            f"no service answers on {api_url(config)} and there is no spool at {spool}; start `spanscore serve`, "
            "or run this from the service's working directory, or with -c <its config> (storage.spool_dir) or "
            "SPANSCORE_API__PORT=<its API port>"
        )
    if not any(write_paths.dead_letter_dir(spool, name).is_dir() for name in write_paths.WRITERS):
        return {"entries": [], "problems": [], "looked_in": str(spool)}
    entries = []
    for dead in write_paths.open_dead_letters(config.storage.spool_dir).values():
        entries += [entry.as_dict() for entry in dead.entries()]
    return {"entries": entries, "problems": [], "looked_in": str(spool)}


async def replay_locally(config: ServiceConfig, payload: dict[str, str | None]) -> dict[str, Any]:
    """Replay through write paths of this process's own; with nothing dead-lettered the store is not touched.

    Dead letters exist only where a service stored before, so a spool without them (or no spool at all,
    which ``list_locally`` names) is most often the wrong directory: opening the store there would create one.
    """
    from spanscore.storage.clickhouse import ClickHouseStore

    entries = list_locally(config)["entries"]
    chosen = [e for e in entries if payload.get("writer") in (None, e["writer"])]
    entry_id = payload.get("id")
    if entry_id is not None and not any(e["id"] == entry_id for e in chosen):
        raise SpanscoreError(f"no dead-letter entry {entry_id!r}; `spanscore deadletter list` shows them")
    if not chosen:
        return {"replayed": [], "problems": []}
    refuse_store_held_elsewhere(config)
    store = ClickHouseStore.from_config(config.storage)
    try:
        store.open()
    except Exception as exc:
        raise SpanscoreError(unopenable(config, exc)) from None
    writers: list[BatchWriter[Any]] = [
        write_paths.span_writer(store, config.storage),
        write_paths.log_writer(store, config.storage),
        write_paths.score_writer(store, config.storage),
        write_paths.decision_writer(store, config.storage),
        write_paths.scored_run_writer(store, config.storage),
        write_paths.feedback_writer(store, config.storage),
        write_paths.metric_writer(store, config.storage),
    ]
    try:
        for writer in writers:
            await writer.start()
        return await DeadLetterOps(lambda: writers).replay(payload.get("writer"), entry_id)
    finally:
        for writer in writers:
            await writer.shutdown()
        store.close()


def format_listing(listing: dict[str, Any], output: str) -> str:
    if output == "json":
        return json.dumps(listing, indent=2, sort_keys=True) + "\n"
    entries = listing.get("entries", [])
    where = f" in the spool at {listing['looked_in']}" if "looked_in" in listing else ""
    lines = [f"{len(entries)} dead-lettered batch{'es' if len(entries) != 1 else ''}{where}"]
    for entry in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(entry["dead_at"]))
        lines.append(f"{entry['writer']:<9} {entry['id']}  {entry['records']:>6} rows  {when}Z  {entry['reason']}")
    lines += [f"degraded: {problem}" for problem in listing.get("problems", [])]
    return "\n".join(lines) + "\n"
