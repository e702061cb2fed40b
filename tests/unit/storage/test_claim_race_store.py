"""Which of two claims on one run is the earlier one, read back from a real store (``FleetClaims.claim``)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any, cast

from spanscore.fleet.coordinator import Fleet
from spanscore.scoring.fleet_claims import FleetClaims
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.fleet_heartbeats import beat

KEY = ("b" * 32, "run-1")


def _claims(store: ClickHouseStore, members: list[str], replica: str) -> FleetClaims:
    fence = SimpleNamespace(token=lambda: None)
    fleet = cast(Fleet, SimpleNamespace(members=lambda: members, replica=replica, fence=fence))
    return FleetClaims(cast(Any, store), fleet, instance=f"{replica}-1", alive_window_s=30.0)


def _both_joined(store: ClickHouseStore) -> None:
    beat(cast(Any, store), "a", "a-1", joined=True)
    beat(cast(Any, store), "b", "b-1", joined=True)


def test_of_two_replicas_that_read_unclaimed_the_later_claim_leaves_the_run_to_the_earlier(
    store: ClickHouseStore,
) -> None:
    _both_joined(store)
    a, b = _claims(store, ["a", "b"], "a"), _claims(store, ["a", "b"], "b")
    assert a.taken([KEY]) == {} and b.taken([KEY]) == {}  # both checked before either claimed
    assert a.claim([KEY]) == set()  # its read-back sees its own claim only
    time.sleep(0.01)
    assert b.claim([KEY]) == {KEY}  # sees both: a's is the earlier
    assert a.claim([KEY]) == set()  # a, reading again, still holds it: one judge call


def test_an_earlier_claim_of_a_replica_no_longer_alive_does_not_hold_the_run(store: ClickHouseStore) -> None:
    _both_joined(store)
    assert _claims(store, ["a", "b"], "a").claim([KEY]) == set()
    time.sleep(0.01)
    assert _claims(store, ["b"], "b").claim([KEY]) == set()  # a left the fleet: b judges
