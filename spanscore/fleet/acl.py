"""The ACLs of a fleet's nodes: closing the ones that exist, and reading what each node really admits.

A credential (``fleet.auth_env``) makes the client create every new node with a digest ACL, but nodes that
exist already keep theirs: a fleet that ran without the credential leaves its path, its member list and its
rules open to any Keeper client, and Keeper never revises an ACL by itself. So a replica with a credential
walks the fleet's path when it joins and sets its ACL on every node that admits anyone else. A node it cannot
change (another credential holds it) stops the join, with the node named: a replica does not coordinate
through nodes that strangers can write.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import NoAuthError, NoNodeError

log = logging.getLogger(__name__)

_MAX_NODES = 100_000
"""A bound on the walk: a fleet has a few nodes per replica, rule set and alert."""


class OpenNodes(Exception):
    """Nodes of the fleet admit others than its credential, and this replica cannot close them."""


@dataclass(frozen=True)
class NodeAcl:
    path: str
    entries: tuple[str, ...]
    """``scheme:id`` of each entry, as Keeper holds it (``world:anyone``, ``digest:user:hash``)."""

    @property
    def open(self) -> bool:
        return any(entry.startswith("world:") for entry in self.entries)

    def shown(self) -> str:
        """Entries without the digest's hash: ``digest:user`` tells who, the hash helps nobody reading it."""
        return ", ".join(_shown(entry) for entry in self.entries) or "nobody"


def _shown(entry: str) -> str:
    scheme, _, rest = entry.partition(":")
    return f"digest:{rest.partition(':')[0]}" if scheme == "digest" else entry


def walk(client: Any, root: str) -> Iterator[str]:
    """``root`` and every node under it, parents first; nodes that vanish during the walk are skipped."""
    pending = [root]
    seen = 0
    while pending and seen < _MAX_NODES:
        path = pending.pop()
        try:
            children = client.get_children(path)
        except NoNodeError:
            continue
        except NoAuthError:
            children = []  # a node this credential may not read: its own ACL is still reported or refused
        seen += 1
        yield path
        pending.extend(f"{path.rstrip('/')}/{child}" for child in sorted(children, reverse=True))


def read_acls(client: Any, root: str) -> list[NodeAcl]:
    """Each node's ACL under ``root`` (``root`` included), parents first."""
    found = []
    for path in walk(client, root):
        try:
            acls, _ = client.get_acls(path)
        except NoNodeError:
            continue
        except NoAuthError:
            found.append(NodeAcl(path, ("(not readable with this client's credential)",)))
            continue
        found.append(NodeAcl(path, tuple(f"{acl.id.scheme}:{acl.id.id}" for acl in acls)))
    return found


def close_nodes(client: Any, root: str, wanted: list[Any]) -> int:
    """Set ``wanted`` on every node under ``root`` that holds another ACL; how many were changed.

    Raises ``OpenNodes`` naming the nodes this credential may not change.
    """
    changed = 0
    refused: list[str] = []
    wanted_ids = [(acl.id.scheme, acl.id.id, acl.perms) for acl in wanted]
    for path in walk(client, root):
        try:
            acls, stat = client.get_acls(path)
            if [(acl.id.scheme, acl.id.id, acl.perms) for acl in acls] == wanted_ids:
                continue
            client.set_acls(path, wanted, version=stat.aversion)
            changed += 1
        except NoNodeError:
            continue
        except NoAuthError:
            refused.append(path)
    if changed:
        log.warning("fleet: closed %d Keeper node(s) under %s that admitted others than fleet.auth_env", changed, root)
    if refused:
        raise OpenNodes(
            f"fleet: this credential may not set the ACL of {', '.join(refused[:5])}"
            f"{' and more' if len(refused) > 5 else ''}: another credential holds them (fix their ACL in Keeper, "
            "or use that fleet's credential in fleet.auth_env)"
        )
    return changed
