"""What a fleet keeps in the shared store so that losing Keeper (or its data) loses nothing that matters.

- ``alert_deliveries``: each alert notification's phases (``sending``, ``done``) with the replica and time, so a
  new leader does not send again what another sent or is sending, and the newest firing keeps its id.
- ``fleet_rule_sets``: every published rule set with its generation, so a Keeper that lost its data is given
  the fleet's newest set back, not a replica's config file.

Small, rare writes (a notification, a rule change): each is one insert, made straight away.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol


class Store(Protocol):
    database: str

    @property
    def client(self) -> Any: ...

    def internal_query(self, sql: str, parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]: ...


_DELIVERY_COLUMNS = ["At", "DeliveryId", "Alert", "FiringId", "Status", "Phase", "Replica", "StartedAt", "Event"]


class StoredDeliveries:
    """``alerting.evaluator.DeliveryLog`` over the shared store; blocking calls (run them in a thread)."""

    def __init__(self, store: Store, replica: str) -> None:
        self._store = store
        self._replica = replica

    def mark(self, event: Mapping[str, Any], phase: str, started_at: float) -> None:
        row = [
            datetime.now(UTC), str(event["id"]), str(event["alert"]), str(event.get("transition_id", "")),
            str(event["status"]), phase, self._replica, float(started_at), json.dumps(dict(event)),
        ]  # fmt: skip
        columns = [[value] for value in row]
        self._store.client.insert(
            f"{self._store.database}.alert_deliveries", columns, column_names=_DELIVERY_COLUMNS, column_oriented=True
        )

    def phases(self, delivery_id: str) -> dict[str, tuple[str, float]]:
        """Per phase recorded for a notification: the newest (replica, Unix seconds)."""
        rows = self._store.internal_query(
            "SELECT Phase, argMax(Replica, At), toFloat64(max(At)) FROM alert_deliveries"
            " WHERE DeliveryId = {id:String} GROUP BY Phase",
            {"id": delivery_id},
        )
        return {str(phase): (str(replica), float(at)) for phase, replica, at in rows}

    def last_firing(self, alert: str) -> tuple[str, float] | None:
        """The newest transition of ``alert`` when it is a firing: (firing id, its start); None otherwise."""
        rows = self._store.internal_query(
            "SELECT Status, FiringId, StartedAt FROM alert_deliveries WHERE Alert = {alert:String}"
            " ORDER BY At DESC LIMIT 1",
            {"alert": alert},
        )
        if not rows or rows[0][0] != "firing":
            return None
        return str(rows[0][1]), float(rows[0][2])


def record_rule_set(store: Store, generation: int, replica: str, document: bytes) -> None:
    columns = [[datetime.now(UTC)], [generation], [replica], [document.decode("utf-8")]]
    store.client.insert(
        f"{store.database}.fleet_rule_sets",
        columns,
        column_names=["At", "Generation", "Replica", "Document"],
        column_oriented=True,
    )


def newest_rule_set(store: Store) -> tuple[int, bytes] | None:
    """The fleet's newest published set as (generation, document), or None when none was ever recorded."""
    rows = store.internal_query(
        "SELECT Generation, Document FROM fleet_rule_sets ORDER BY Generation DESC, At DESC LIMIT 1"
    )
    if not rows:
        return None
    return int(rows[0][0]), str(rows[0][1]).encode("utf-8")
