"""A look at a fleet from outside, without joining it: who is live, who leads, which rule set is published.

``spanscore config check --keeper`` uses it to say whether a replica started with this config would find its
fleet, and whether the file's rules are the fleet's. Read-only: it creates no node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kazoo.exceptions import NoNodeError

from spanscore.fleet.acl import NodeAcl, read_acls
from spanscore.fleet.config import FleetConfig
from spanscore.fleet.coordinator import keeper_client
from spanscore.fleet.documents import MalformedNode, decode_object, decode_rules


@dataclass
class FleetView:
    members: list[str] = field(default_factory=list)
    """Live replicas, the leader first (lowest sequence number)."""
    statuses: dict[str, dict[str, Any]] = field(default_factory=dict)
    rules: list[dict[str, Any]] | None = None
    """The published rule set (None: no replica published one yet)."""
    rules_version: int = -1
    rules_problem: str = ""
    """Why the published rules node is not a rule set (empty: it is one, or there is none)."""
    acls: list[NodeAcl] = field(default_factory=list)
    """Each node under the fleet's path with the ACL Keeper holds for it, parents first."""


def inspect_fleet(config: FleetConfig, *, timeout_s: float = 5.0) -> FleetView:
    """Read the fleet's nodes; raises ``TimeoutError`` (kazoo's) when Keeper does not answer in time."""
    client = keeper_client(config.model_copy(update={"session_timeout_s": max(2.0, timeout_s)}))
    client.start(timeout=timeout_s)
    try:
        view = FleetView()
        members_path = f"{config.path.rstrip('/')}/members"
        try:
            children = client.get_children(members_path)
        except NoNodeError:
            children = []
        ordered = sorted(children, key=lambda child: child.rpartition("-")[2])
        for child in ordered:
            try:
                data, _ = client.get(f"{members_path}/{child}")
                status = decode_object(data, f"{members_path}/{child}")
            except (NoNodeError, ValueError):
                continue
            name = status.get("replica") if isinstance(status, dict) else None
            if isinstance(name, str) and name not in view.statuses:
                view.members.append(name)
                view.statuses[name] = status
        try:
            data, stat = client.get(f"{config.path.rstrip('/')}/rules")
            view.rules_version = int(stat.version)
            document = decode_rules(data, f"{config.path.rstrip('/')}/rules")
            view.rules = document["rules"]
            generation = document.get("generation")  # the fleet version, which outlives Keeper's node versions
            view.rules_version = generation if isinstance(generation, int) and generation >= 0 else view.rules_version
        except NoNodeError:
            pass
        except MalformedNode as exc:
            view.rules_problem = str(exc)
        view.acls = read_acls(client, config.path)
        return view
    finally:
        client.stop()
        client.close()
