"""Daily budgets a fleet cannot overspend: replicas lease small slices of a rule's limit from one Keeper node.

The node ``<path>/budgets/<rule key>`` holds ``{"day", "limit", "rule", "holders": {replica: [spent,
unspent]}, "gone": spent}``: what each live replica has spent of its leases (by its own count, which includes
judge calls whose scores are not stored yet) and holds unspent, and what replicas that left spent. What is
left to lease is the limit less every live holder's unspent part, less the larger of the day's spend as the
shared store has it (so a Keeper that lost its data, or a restarted replica, starts from the truth) and the
spend the node accounts for. Counting only the store's spend let a replica lease again what it had spent
but not yet stored: 6 judge calls for a limit of 5 in the bench's smoke run. A lease is taken by
compare-and-set on that node, so two replicas never lease the same part.

- **Slices**: a lease is ``1/SLICES`` of an equal part of what is left among ``max(live members,
  fleet.expected_replicas)``, so no replica takes the whole limit, not even before it has seen the others.
- **Returned on stop**: a replica that leaves removes its holding (``release``).
- **Forfeited, not re-leased**: a holder that is no longer a live member (killed, or Keeper expired its
  session) is moved at the next lease from ``holders`` to ``gone``, which counts as spent for the day. Its
  registered holding is all that is known of it: judge calls it made after registering, whose scores it never
  stored, are not in the store's spend, so leasing that part again let a fleet overspend its limit after a
  ``kill -9`` (6 calls for a limit of 5 in the bench's smoke run). The cost is under-spending by at most the
  lost replica's slice, never more than the limit. A replica whose session was lost forfeits what it held
  (``scoring.fleet_member``) for the same reason. The same process coming back under its name (its process
  ``instance`` recorded with its holding) takes its own forfeit back out of ``gone`` when it leases again: its
  own count of what it spent, which it registers, is complete. Seen: a replica paused past its session
  timeout came back to a day whose unleased part its forfeit had used up, and refused 14 runs.
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


def _state(fleet: Fleet, node: str, data: bytes | None, day: int) -> dict[str, Any]:
    """Today's state of the node (a malformed node, or yesterday's, holds nothing)."""
    if not data:
        return {}
    try:
        state = decode_object(data, fleet.node(node))
    except MalformedNode:
        return {}
    return state if state.get("day") == day else {}


def _holders(fleet: Fleet, node: str, data: bytes | None, day: int) -> dict[str, tuple[float, float]]:
    """Today's holdings in the node: replica -> (spent, unspent)."""
    holders: Any = _state(fleet, node, data, day).get("holders")
    found: dict[str, tuple[float, float]] = {}
    for name, held in (holders if isinstance(holders, dict) else {}).items():
        if isinstance(held, list) and len(held) == 2 and all(isinstance(v, int | float) and v >= 0 for v in held):
            found[str(name)] = (float(held[0]), float(held[1]))
    return found


def _gone(fleet: Fleet, node: str, data: bytes | None, day: int) -> float:
    gone = _state(fleet, node, data, day).get("gone")
    return float(gone) if isinstance(gone, int | float) and gone >= 0 else 0.0


def _forfeits(fleet: Fleet, node: str, data: bytes | None, day: int) -> tuple[dict[str, str], dict[str, float]]:
    """Today's holders' process instances, and what each gone process forfeited ("replica/instance" keys).

    Kept beside ``gone`` (which stays the total, for readers that know only it), so that a process that lost
    its Keeper session and comes back under its name takes its own forfeit back: its count of what it spent is
    complete, and charging the forfeit too would leave that part of the day unspent for good.
    """
    state = _state(fleet, node, data, day)
    instances: Any = state.get("instances")
    forfeits: Any = state.get("forfeits")
    return (
        {str(k): v for k, v in instances.items() if isinstance(v, str)} if isinstance(instances, dict) else {},
        {str(k): float(v) for k, v in forfeits.items() if isinstance(v, int | float) and v >= 0}
        if isinstance(forfeits, dict)
        else {},
    )


def take_lease(
    fleet: Fleet,
    rule: str,
    day: int,
    limit: float,
    *,
    unspent: float,
    spent: float = 0.0,
    fleet_spent: float,
    members: Sequence[str],
    expected: int,
    minimum: float,
    instance: str = "",
) -> float:
    """Lease a slice of what is left of ``rule``'s limit for ``day``; 0 when nothing is left.

    ``unspent`` and ``spent`` are what this replica holds unspent and has spent of its leases today (registered
    with the lease), ``fleet_spent`` the day's spend in the shared store, ``members`` the live replicas. A holder
    that is no longer a member forfeits its holding: its spent and unspent parts both count as spent (``gone``).
    Blocking (Keeper calls): run it in a thread.
    """
    node = budget_node(rule)
    for _ in range(ATTEMPTS):
        data, version = fleet.read(node)
        known = _holders(fleet, node, data, day)
        instances, forfeits = _forfeits(fleet, node, data, day)
        holders = {name: held for name, held in known.items() if name in members}
        lost = {name: held for name, held in known.items() if name not in members and name != fleet.replica}
        for name, held in lost.items():
            key = f"{name}/{instances.pop(name, '')}"
            forfeits[key] = forfeits.get(key, 0.0) + sum(held)
        mine = f"{fleet.replica}/{instance}"
        back = forfeits.pop(mine, 0.0) if instance else 0.0  # this process, back: its own spend counts instead
        gone = max(0.0, _gone(fleet, node, data, day) + sum(sum(held) for held in lost.values()) - back)
        holders[fleet.replica] = (max(0.0, spent), max(0.0, unspent))
        if instance:
            instances[fleet.replica] = instance
        accounted = sum(held[0] for held in holders.values()) + gone
        left = limit - sum(held[1] for held in holders.values()) - max(fleet_spent, accounted)
        share = max(len(members), expected, 1)
        chunk = 0.0 if left <= 1e-12 else min(left, max(left / (SLICES * share), minimum))
        holders[fleet.replica] = (holders[fleet.replica][0], holders[fleet.replica][1] + chunk)
        listed = {name: list(held) for name, held in holders.items()}
        state = {
            "day": day, "limit": limit, "rule": rule, "holders": listed, "gone": gone,
            "instances": {name: found for name, found in instances.items() if name in holders}, "forfeits": forfeits,
        }  # fmt: skip
        body = json.dumps(state).encode()
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


def release(fleet: Fleet, rule: str, day: int, spent: float | None = None) -> None:
    """Give back what this replica holds unspent (it leaves): the others may lease it at once.

    What it spent stays accounted for (``gone``): ``spent`` (its own count at the end) or the last it registered.
    """
    node = budget_node(rule)
    for _ in range(ATTEMPTS):
        data, version = fleet.read(node)
        holders = _holders(fleet, node, data, day)
        if fleet.replica not in holders:
            return
        registered = holders.pop(fleet.replica)[0]
        own_spent = registered if spent is None else max(spent, registered)
        state = decode_object(data or b"{}", fleet.node(node))
        listed = {name: list(held) for name, held in holders.items()}
        gone = _gone(fleet, node, data, day) + own_spent
        body = json.dumps({**state, "holders": listed, "gone": gone}).encode()
        try:
            fleet.write(node, body, expected_version=version)
            return
        except VersionConflict:
            continue
