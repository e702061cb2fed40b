"""One live replica per name: a second replica started with a name already in the fleet is refused at join.

Ownership is rendezvous hashing over member *names*, so two live replicas with one name would both own the
same sessions and both lead. A member node of this name that belongs to another session is either a live
twin or a predecessor that was killed and whose session Keeper has not ended yet (a StatefulSet pod restarted
at once): the joiner waits up to twice the session timeout (Keeper ends sessions in ticks, a little late) for
it to go, and is refused if it stays. Two twins
that join at the same moment both create their node; the one with the higher sequence number leaves again.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kazoo.exceptions import NoNodeError

if TYPE_CHECKING:
    from spanscore.fleet.coordinator import Fleet

POLL_S = 0.2


def _same_name(fleet: Fleet, members: str) -> list[str]:
    """Member nodes carrying this replica's name, by their sequence order."""
    children = fleet.client.get_children(members)
    mine = [child for child in children if child.rpartition("-")[0] == fleet.replica]
    return sorted(mine, key=lambda child: child.rpartition("-")[2])


def _refusal(fleet: Fleet, other: str) -> str:
    return (
        f"fleet.replica {fleet.replica!r} is already a live member of {fleet.config.path} ({other}); this replica "
        "stays out of the fleet and scores no session. Give every replica its own name (fleet.replica, or a "
        "unique host name) and restart it"
    )


def name_is_free(fleet: Fleet, members: str) -> bool:
    """Before creating the member node: wait for another session's node of this name to go; refuse if it stays."""
    session_id = fleet.client.client_id[0] if fleet.client.client_id else None
    deadline = time.monotonic() + 2 * fleet.config.session_timeout_s + 2.0  # Keeper ends sessions in ticks: margin
    while True:
        others = []
        for child in _same_name(fleet, members):
            try:
                _, stat = fleet.client.get(f"{members}/{child}")
            except NoNodeError:
                continue
            if stat.ephemeralOwner != session_id:
                others.append(child)
        if not others:
            return True
        if time.monotonic() >= deadline:
            fleet.refuse(_refusal(fleet, others[0]))
            return False
        time.sleep(POLL_S)


def first_of_name(fleet: Fleet, members: str) -> bool:
    """After creating it: if a twin's node of this name came first, delete ours and refuse."""
    node = fleet.member_node
    found = _same_name(fleet, members)
    if node is None or not found or node.rpartition("/")[2] == found[0]:
        return True
    try:
        fleet.client.delete(node)
    except NoNodeError:
        pass
    fleet.refuse(_refusal(fleet, found[0]))
    return False
