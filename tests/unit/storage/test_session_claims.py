"""A session a live replica claimed since its latest score is being scored there: a new owner leaves it alone."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any, cast

from spanscore.fleet.coordinator import Fleet
from spanscore.scoring.fleet_claims import FleetClaims
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.fleet_heartbeats import beat
from spanscore.storage.scoring_claims import write_claims
from tests.unit.storage.test_unscored_sessions import _score


def _claims(store: ClickHouseStore, members: list[str]) -> FleetClaims:
    fleet = cast(Fleet, SimpleNamespace(members=lambda: members, replica="b"))
    return FleetClaims(cast(Any, store), fleet, instance="b-1", alive_window_s=30.0)


def test_a_session_claimed_by_a_live_replica_since_its_last_score_is_scored_there(store: ClickHouseStore) -> None:
    """The new owner saw no scoring record (it waits in the old owner's writer buffer) and judged the session a
    second time; the claim was in the store before the old owner's judge call."""
    raw = cast(Any, store)
    beat(raw, "a", "a-1", joined=True)
    write_claims(raw, [("", "conv-1"), ("", "conv-2")], "a", "a-1", (1, 1))
    store.insert_scores_sync([_score("conv-2", "conversation", time.time_ns() + 10**9)])  # conv-2 scored since
    claims = _claims(store, ["a", "b"])
    assert claims.scoring_elsewhere(["conv-1", "conv-2", "conv-3"]) == {"conv-1"}
    assert _claims(store, ["b"]).scoring_elsewhere(["conv-1"]) == set()  # its claimant left the fleet


def test_this_process_claims_and_claims_before_a_score_do_not_hold_a_session(store: ClickHouseStore) -> None:
    raw = cast(Any, store)
    beat(raw, "b", "b-1", joined=True)
    beat(raw, "a", "a-1", joined=True)
    store.insert_scores_sync([_score("conv-4", "conversation", time.time_ns() - 10**9)])
    write_claims(raw, [("", "conv-5")], "b", "b-1", (1, 1))  # this process's own
    time.sleep(0.01)
    store.insert_scores_sync([_score("conv-6", "conversation", time.time_ns() + 10**9)])
    write_claims(raw, [("", "conv-6")], "a", "a-1", (1, 1))  # before conv-6's latest score
    assert _claims(store, ["a", "b"]).scoring_elsewhere(["conv-4", "conv-5", "conv-6"]) == set()
