"""Fleet heartbeats in the shared store: which replicas have Keeper, seen without Keeper.

A replica that loses Keeper cannot ask Keeper who else lost it. The store can answer: every replica writes a
row every few seconds (``fleet_heartbeats``, migration 0019), and a replica without Keeper reads whether any
other process wrote "joined" lately. Blocking calls: run them in a thread.
"""

from __future__ import annotations

from datetime import UTC, datetime

from spanscore.storage.fleet_records import Store

_COLUMNS = ["At", "Replica", "Instance", "Joined"]


def beat(store: Store, replica: str, instance: str, *, joined: bool) -> None:
    """One row: this process (``instance``) of ``replica`` is alive, a member of the fleet or not."""
    columns = [[datetime.now(UTC)], [replica], [instance], [1 if joined else 0]]
    store.client.insert(f"{store.database}.fleet_heartbeats", columns, column_names=_COLUMNS, column_oriented=True)


def joined_peers(store: Store, instance: str, within_s: float) -> list[str]:
    """Replica names of other processes whose newest heartbeat, written within ``within_s``, said "joined"."""
    rows = store.internal_query(
        "SELECT Replica FROM fleet_heartbeats"
        " WHERE At >= now64(3) - toIntervalMillisecond({ms:UInt64}) AND Instance != {instance:String}"
        " GROUP BY Instance, Replica HAVING argMax(Joined, At) = 1 ORDER BY Replica",
        {"ms": int(within_s * 1000), "instance": instance},
    )
    return [str(row[0]) for row in rows]
