"""Daily budgets a fleet cannot overspend: replicas lease parts of a rule's limit from one Keeper node.

The node ``<path>/budgets/<rule key>`` holds ``{"day", "limit", "granted"}``: what was granted today over all
replicas. A replica takes a lease by compare-and-set on that node, so the leases of a day never add up to
more than the limit, whoever asks and however often. A replica spends only what it holds; one that is lost
takes its unspent lease with it (the fleet then spends less than the limit, never more).
"""

from __future__ import annotations

import hashlib
import json

from spanscore.fleet.coordinator import Fleet, VersionConflict

ATTEMPTS = 10


def budget_node(rule: str) -> str:
    """A node name for any rule name (names may hold characters a node path cannot)."""
    return "budgets/" + hashlib.sha256(rule.encode()).hexdigest()[:32]


def take_lease(fleet: Fleet, rule: str, day: int, limit: float, *, members: int, minimum: float) -> float:
    """Lease part of what is left of ``rule``'s limit for ``day``; 0 when nothing is left.

    The lease is an equal share among ``members`` of what is left, at least ``minimum`` when that much is
    left. Blocking (Keeper calls): run it in a thread.
    """
    node = budget_node(rule)
    for _ in range(ATTEMPTS):
        data, version = fleet.read(node)
        state = json.loads(data) if data else {}
        granted = float(state.get("granted", 0.0)) if state.get("day") == day else 0.0
        left = limit - granted
        if left <= 1e-12:
            return 0.0
        chunk = min(left, max(left / max(1, members), minimum))
        body = json.dumps({"day": day, "limit": limit, "granted": granted + chunk, "rule": rule}).encode()
        try:
            fleet.write(node, body, expected_version=version)
        except VersionConflict:
            continue  # another replica leased meanwhile: read what is left again
        return chunk
    return 0.0
