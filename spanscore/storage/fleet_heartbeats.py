"""Fleet heartbeats in the shared store: which replicas have Keeper, seen without Keeper.

A replica that loses Keeper cannot ask Keeper who else lost it. The store can answer: every replica writes a
row every few seconds (``fleet_heartbeats``, migration 0019), and a replica without Keeper reads whether any
other process wrote "joined" lately. Blocking calls: run them in a thread.
"""

from __future__ import annotations

from datetime import UTC, datetime

from spanscore.storage.fleet_records import Store

_COLUMNS = ["At", "Replica", "Instance", "Joined", "Fleet"]


def beat(store: Store, replica: str, instance: str, *, joined: bool, fleet: str = "") -> None:
    """One row: this process (``instance``) of ``replica`` in ``fleet`` (its Keeper path) is alive, a member or not."""
    columns = [[datetime.now(UTC)], [replica], [instance], [1 if joined else 0], [fleet]]
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


def other_fleets(store: Store, fleet: str, within_s: float) -> dict[str, list[str]]:
    """Keeper path -> replica names of processes of another fleet that wrote a heartbeat here within ``within_s``."""
    rows = store.internal_query(
        "SELECT Fleet, groupUniqArray(Replica) FROM fleet_heartbeats"
        " WHERE At >= now64(3) - toIntervalMillisecond({ms:UInt64}) AND Fleet != '' AND Fleet != {fleet:String}"
        " GROUP BY Fleet ORDER BY Fleet",
        {"ms": int(within_s * 1000), "fleet": fleet},
    )
    return {str(path): sorted(str(name) for name in names) for path, names in rows}
