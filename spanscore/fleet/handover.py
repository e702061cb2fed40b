"""A replica that stops on purpose hands over the runs it was still assembling, instead of dropping them.

Before it leaves (SIGTERM), a replica stops making runs ready, finishes and stores what it scored, and writes
``<path>/handovers/<replica>``: when it left, and the trace ids it still held unready (their spans are in the
store). Then it leaves the membership. The survivors see it go, read the note, and each takes up at once,
from the store, the listed traces it now owns by trace id; a replica lost without a note is waited for as
before (``collector.runs.max_wait_s``), because it may have decided those runs in its last moments.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

from kazoo.exceptions import NoNodeError

from spanscore.fleet.coordinator import Fleet

MAX_TRACES = 20_000
"""Trace ids one note holds (about 0.7 MB, under Keeper's 1 MB node limit); past it, the rest wait as for a
lost replica."""
FRESH_S = 120.0
"""A note older than this when its writer left the membership is an earlier stop's, and ignored."""


def _node(fleet: Fleet, replica: str) -> str:
    return fleet.node("handovers", replica)


def write_handover(fleet: Fleet, trace_ids: Iterable[str]) -> int:
    """Write this replica's note (blocking; Keeper must be connected); how many trace ids it lists."""
    traces = list(trace_ids)[:MAX_TRACES]
    body = json.dumps({"left_at_ns": time.time_ns(), "traces": traces}).encode()
    path = _node(fleet, fleet.replica)
    if fleet.client.exists(path) is None:
        fleet.client.create(path, body, makepath=True)
    else:
        fleet.client.set(path, body)
    return len(traces)


def read_handovers(fleet: Fleet, replicas: Iterable[str], lost_at_ns: int) -> dict[str, list[str]]:
    """The fresh notes of replicas that left around ``lost_at_ns``: their unready trace ids, by replica."""
    found: dict[str, list[str]] = {}
    for replica in replicas:
        try:
            data, _ = fleet.client.get(_node(fleet, replica))
            note = json.loads(data)
        except (NoNodeError, ValueError):
            continue
        left_at = int(note.get("left_at_ns", 0)) if isinstance(note, dict) else 0
        if abs(lost_at_ns - left_at) <= FRESH_S * 1e9:
            found[replica] = [str(trace) for trace in note.get("traces") or ()]
    return found
