"""Daily budgets a fleet cannot overspend: replicas lease small slices of a rule's limit from one Keeper node.

The node ``<path>/budgets/<rule key>`` holds ``{"day", "limit", "rule", "holders": {replica: unspent}}``: what
each live replica holds and has not spent yet. What is left to lease is the limit less the day's spend as the
shared store has it (every replica's scores, so a Keeper that lost its data, or a restarted replica, starts
from the truth) less every live holder's unspent lease. A lease is taken by compare-and-set on that node, so
two replicas never lease the same part.

- **Slices**: a lease is ``1/SLICES`` of an equal part of what is left among ``max(live members,
  fleet.expected_replicas)``, so no replica takes the whole limit, not even before it has seen the others.
- **Returned on stop**: a replica that leaves removes its holding (``release``).
- **Reclaimed**: a holder that is no longer a live member (Keeper expired its session) is dropped at the next
  lease, and its unspent part is leased again. A replica whose session was lost forfeits what it held
  (``scoring.fleet_member``), so a reclaimed part is never spent twice.
- **Re-registered**: every replica writes its own holding whenever it leases or finds it missing, so after
  Keeper lost its data the holdings come back from the replicas' memory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from spanscore.fleet.coordinator import Fleet, VersionConflict
from spanscore.fleet.documents import MalformedNode, decode_object

ATTEMPTS = 10
SLICES = 2


def budget_node(rule: str) -> str:
    """A node name for any rule name (names may hold characters a node path cannot)."""
    return "budgets/" + hashlib.sha256(rule.encode()).hexdigest()[:32]


def _holders(fleet: Fleet, node: str, data: bytes | None, day: int) -> dict[str, float]:
    """Today's holdings in the node (a malformed node, or yesterday's, holds none)."""
    if not data:
        return {}
    try:
        state = decode_object(data, fleet.node(node))
    except MalformedNode:
        return {}
    holders: Any = state.get("holders") if state.get("day") == day else None
    if not isinstance(holders, dict):
        return {}
    return {str(k): float(v) for k, v in holders.items() if isinstance(v, int | float) and v >= 0}


def take_lease(
    fleet: Fleet,
    rule: str,
    day: int,
    limit: float,
    *,
    unspent: float,
    fleet_spent: float,
    members: Sequence[str],
    expected: int,
    minimum: float,
) -> float:
    """Lease a slice of what is left of ``rule``'s limit for ``day``; 0 when nothing is left.

    ``unspent`` is what this replica holds and has not spent (registered with the lease), ``fleet_spent`` the
    day's spend in the shared store, ``members`` the live replicas. Blocking (Keeper calls): run it in a thread.
    """
    node = budget_node(rule)
    for _ in range(ATTEMPTS):
        data, version = fleet.read(node)
        holders = {name: held for name, held in _holders(fleet, node, data, day).items() if name in members}
        holders[fleet.replica] = max(0.0, unspent)
        left = limit - fleet_spent - sum(holders.values())
        share = max(len(members), expected, 1)
        chunk = 0.0 if left <= 1e-12 else min(left, max(left / (SLICES * share), minimum))
        holders[fleet.replica] += chunk
        body = json.dumps({"day": day, "limit": limit, "rule": rule, "holders": holders}).encode()
        try:
            fleet.write(node, body, expected_version=version)
        except VersionConflict:
            continue  # another replica leased meanwhile: read what is left again
        return chunk
    return 0.0


def registered(fleet: Fleet, rule: str, day: int) -> bool:
    """Whether this replica's holding is in today's node (after Keeper lost its data it is not)."""
    data, _ = fleet.read(budget_node(rule))
    return fleet.replica in _holders(fleet, budget_node(rule), data, day)


def release(fleet: Fleet, rule: str, day: int) -> None:
    """Give back what this replica holds unspent (it leaves): the others may lease it at once."""
    node = budget_node(rule)
    for _ in range(ATTEMPTS):
        data, version = fleet.read(node)
        holders = _holders(fleet, node, data, day)
        if fleet.replica not in holders:
            return
        del holders[fleet.replica]
        state = decode_object(data or b"{}", fleet.node(node))
        body = json.dumps({**state, "holders": holders}).encode()
        try:
            fleet.write(node, body, expected_version=version)
            return
        except VersionConflict:
            continue
