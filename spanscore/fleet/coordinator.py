"""One replica's place in its fleet: membership, the leader, who owns a key, and versioned shared documents.

Everything rests on Keeper's own guarantees rather than a protocol of ours:

- **Membership** is an ephemeral sequential node per replica under ``<path>/members``: Keeper deletes it when
  the replica's session ends (a crash, a partition longer than ``session_timeout_s``), and every replica
  watches the list.
- **The leader** is the live member with the lowest sequence number (the standard ZooKeeper election
  recipe); it evaluates alerts.
- **Owners** come from rendezvous hashing over the live members: every replica computes the same owner for
  a key from the same list, and when a member leaves only its keys move.
- **Shared documents** (the fleet's rule set) are nodes written with compare-and-set on their version.

Ingest never waits on Keeper: ``start`` connects in the background. While Keeper is unreachable a replica
keeps the last membership it saw, is never the leader (no alert is sent twice), and ``connected`` says so in
/metrics and ``spanscore status``; what it may still do with what it owned is the fence's to say
(``spanscore.fleet.fence``): once its lease runs out, nothing.

Keeper calls run on kazoo's own threads; callbacks registered here are called there and must hand work to
the event loop themselves.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.security import make_digest_acl

from spanscore.fleet.acl import OpenNodes, close_nodes
from spanscore.fleet.config import FleetConfig
from spanscore.fleet.documents import decode_object
from spanscore.fleet.fence import Fence, lease_clock
from spanscore.fleet.names import first_of_name, name_is_free

log = logging.getLogger(__name__)

MembersFn = Callable[[list[str]], None]
DocumentFn = Callable[[bytes | None, int], None]


class VersionConflict(Exception):
    """Another replica wrote the document since the version this write expected."""


class KeeperUnavailable(Exception):
    """The write needs Keeper and this replica has no session now."""


RefusedFn = Callable[[str], object]


class Fleet:
    def __init__(self, config: FleetConfig) -> None:
        self.config = config
        self.replica = config.replica_name()
        self._client = keeper_client(
            config,
            connection_retry={"max_tries": -1, "delay": 0.2, "max_delay": 2.0},
            command_retry={"max_tries": 3, "delay": 0.1, "max_delay": 1.0},
        )
        self._lock = threading.Lock()
        self._members: list[tuple[int, str]] = []
        """Live members as (sequence, replica), lowest sequence first."""
        self._my_node: str | None = None
        self._member_listeners: list[MembersFn] = []
        self._watching = False
        self.state = "connecting"
        self.session_losses = 0
        self._suspensions = 0
        self.membership_changes = 0
        self._status: dict[str, Any] = {}
        self.refused: str | None = None
        """Why this replica may not join (another live replica has its name); None while it may."""
        self._refused_listeners: list[RefusedFn] = []
        self.fence = Fence(self)
        """What this replica may still do with what it owned (``spanscore.fleet.fence``)."""

    @property
    def client(self) -> KazooClient:
        """The Keeper client, for stores that keep their own nodes under ``node(...)`` (alert states)."""
        return self._client

    def node(self, *parts: str) -> str:
        return "/".join([self.config.path.rstrip("/"), *parts])

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Connect in the background; membership follows as soon as Keeper answers."""
        self._client.add_listener(self._on_state)
        self._client.start_async()
        self.fence.start()

    def stop(self) -> None:
        """Leave the fleet: the member node goes at once, so others take over without waiting for a timeout."""
        self.fence.stop()
        self._client.remove_listener(self._on_state)  # a session we end is not a session lost
        try:
            self._client.stop()
            self._client.close()
        except Exception as exc:
            # A session restarted in a partition (_restart_if_stuck) can leave kazoo's connection thread
            # retrying into the silence past its stop timeout: its close then refuses. Leaving must not stop
            # the shutdown; the member node goes when Keeper expires the session instead.
            log.warning(
                "fleet: the Keeper connection did not close (%s); the member node goes when Keeper expires "
                "this session, within %.0f s",
                exc,
                self.config.session_timeout_s,
            )
        self.state = "stopped"

    def expire(self) -> None:
        """End this replica's session from outside, as Keeper does to a crashed replica, and go quiet.

        The usual ZooKeeper test technique: a second client attaches to the same session and closes it, so
        the session expires on the server; then this client stops without rejoining.
        """
        session_id, password = self._client.client_id
        ghost = keeper_client(self.config, client_id=(session_id, password))
        try:
            ghost.start(timeout=self.config.session_timeout_s)
            ghost.stop()
        finally:
            ghost.close()
        self._client.remove_listener(self._on_state)
        self.stop()

    def wait_joined(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.joined:
                return True
            time.sleep(0.05)
        return self.joined

    @property
    def connected(self) -> bool:
        return self.state == "connected"

    @property
    def joined(self) -> bool:
        with self._lock:
            return self.connected and any(name == self.replica for _, name in self._members)

    def _on_state(self, state: str) -> None:
        if state == KazooState.CONNECTED:
            self.state = "connected"
            self._client.handler.spawn(self._join)
        elif state == KazooState.SUSPENDED:
            self.state = "suspended"
            self._watch_suspension()
            log.warning("fleet: Keeper connection suspended; leadership paused, sessions wait once the lease ends")
        elif state == KazooState.LOST:
            self.state = "lost"
            self.fence.revoke()
            self.session_losses += 1
            self._my_node = None
            log.warning("fleet: Keeper session lost; this replica rejoins when Keeper answers again")

    def _watch_suspension(self) -> None:
        """Start a new session if this one stays suspended past the point where Keeper must have expired it.

        A Keeper restarted without its data refuses, for ever, a client that saw a newer state than it
        holds (ZooKeeper's zxid check), and kazoo keeps retrying that session: after 1.5 session timeouts
        suspended, the session is gone on any Keeper anyway, so a fresh one loses nothing.
        """
        self._suspensions += 1
        timer = threading.Timer(1.5 * self.config.session_timeout_s, self._restart_if_stuck, (self._suspensions,))
        timer.daemon = True
        timer.start()

    def _restart_if_stuck(self, suspension: int) -> None:
        if self.state != "suspended" or suspension != self._suspensions:
            return
        log.warning("fleet: Keeper did not take this session back in time; starting a new session")
        try:
            self._client.stop()  # the listener sees LOST: the member node and leases count as gone
            self._client.start_async()
        except Exception:
            log.exception("fleet: a new Keeper session could not be started; retrying on the next suspension")

    def _join(self) -> None:
        if self.refused is not None:
            return
        try:
            members = self.node("members")
            self._client.ensure_path(members)
            if self.config.auth_env:  # nodes made before the credential was set keep their open ACL otherwise
                close_nodes(self._client, self.config.path, self._client.default_acl)
            if self._my_node is None or self._client.exists(self._my_node) is None:
                if not name_is_free(self, members):
                    return
                data = json.dumps({"replica": self.replica, **self._status}).encode()
                self._my_node = self._client.create(f"{members}/{self.replica}-", data, ephemeral=True, sequence=True)
                if not first_of_name(self, members):
                    self._my_node = None
                    return
                log.info("fleet: joined as %s (%s)", self.replica, self._my_node)
            if not self._watching:
                self._watching = True
                ChildrenWatch(self._client, members, self._on_members)
        except OpenNodes as exc:
            log.error("%s; not joining the fleet until they are closed", exc)
        except Exception:
            log.exception("fleet: could not join; retrying on the next connection")

    def _on_members(self, children: list[str]) -> None:
        seen: dict[str, int] = {}
        for child in children:
            name, _, sequence = child.rpartition("-")
            if name and sequence.isdigit():
                seen[name] = min(int(sequence), seen.get(name, int(sequence)))
        members = sorted((sequence, name) for name, sequence in seen.items())
        with self._lock:
            changed = [name for _, name in members] != [name for _, name in self._members]
            self._members = members
            listeners = list(self._member_listeners)
        if changed:
            self.membership_changes += 1
            names = sorted(name for _, name in members)
            log.info("fleet: members now %s", ", ".join(names) or "none")
            for listener in listeners:
                try:
                    listener(names)
                except Exception:
                    log.exception("fleet: a membership listener failed")

    def refuse(self, reason: str) -> None:
        """Stay out of the fleet for good: no member node, no ownership, no lease; listeners hear why."""
        self.refused = reason
        self.fence.revoke()
        log.error("fleet: %s", reason)
        for listener in list(self._refused_listeners):
            listener(reason)

    def on_refused(self, listener: RefusedFn) -> None:
        """Call ``listener(reason)`` (on a Keeper thread) if this replica is refused at join."""
        self._refused_listeners.append(listener)

    @property
    def member_node(self) -> str | None:
        """The member node of this replica while it has one."""
        return self._my_node

    def member_stat(self, *, timeout_s: float) -> tuple[float, int, Any] | None:
        """One round trip for the fence: (``fence.lease_clock`` send time, session id, the member node's stat or None).

        None when there is no session or node to ask about.
        """
        node, client_id = self._my_node, self._client.client_id
        if node is None or client_id is None or not self.connected:
            return None
        sent = lease_clock()
        stat = self._client.exists_async(node).get(timeout=timeout_s)
        return sent, int(client_id[0]), stat

    # -- membership, leader, owners -------------------------------------------------------------------------

    def on_members(self, listener: MembersFn) -> None:
        """Call ``listener(sorted names)`` on every change of the live members (on a Keeper thread)."""
        with self._lock:
            self._member_listeners.append(listener)

    def members(self) -> list[str]:
        """The live replicas as last seen (kept while Keeper is unreachable); just this one before any."""
        with self._lock:
            names = sorted(name for _, name in self._members)
        return names or [self.replica]

    def is_leader(self) -> bool:
        """True only while connected and first in line: a cut-off replica never acts as leader."""
        with self._lock:
            first = self._members[0][1] if self._members else None
        return self.connected and first == self.replica

    def owner(self, key: str) -> str:
        return rendezvous_owner(key, self.members())

    def owns(self, key: str) -> bool:
        return self.owner(key) == self.replica

    # -- versioned documents ---------------------------------------------------------------------------------

    def read(self, name: str, *, timeout_s: float | None = None) -> tuple[bytes | None, int]:
        """A shared document and its version (-1 when it does not exist).

        ``timeout_s`` bounds the wait: a partition is silence, and kazoo notices it only when the connection
        times out; a caller that answers a person (a rule PUT) gives up sooner with ``KeeperUnavailable``.
        """
        self._need_session()
        try:
            data, stat = self._client.get_async(self.node(name)).get(timeout=timeout_s)
        except NoNodeError:
            return None, -1
        except (ConnectionLoss, SessionExpiredError, ConnectionClosedError, self._client.handler.timeout_exception):
            raise KeeperUnavailable(
                f"fleet coordination is unavailable (Keeper did not answer: {self.state})"
            ) from None
        return bytes(data), int(stat.version)

    def write(self, name: str, data: bytes, *, expected_version: int) -> int:
        """Write a document if it is still at ``expected_version`` (-1: must not exist yet); the new version."""
        self._need_session()
        path = self.node(name)
        try:
            if expected_version < 0:
                self._client.create(path, data, makepath=True)
                return 0
            stat = self._client.set(path, data, version=expected_version)
            return int(stat.version)
        except (BadVersionError, NodeExistsError) as exc:
            raise VersionConflict(f"{name} changed since version {expected_version}") from exc
        except (ConnectionLoss, SessionExpiredError, ConnectionClosedError) as exc:
            raise KeeperUnavailable(
                f"fleet coordination is unavailable (Keeper lost during the write, which may or may not have "
                f"been applied: {type(exc).__name__})"
            ) from exc

    def watch(self, name: str, listener: DocumentFn) -> None:
        """Call ``listener(data, version)`` now and on every change of a document (on a Keeper thread)."""

        def changed(data: bytes | None, stat: Any) -> None:
            listener(None if data is None else bytes(data), -1 if stat is None else int(stat.version))

        DataWatch(self._client, self.node(name), changed)

    def publish_status(self, **fields: Any) -> None:
        """Put this replica's status (e.g. its applied rule version) on its member node for the others."""
        self._status.update(fields)
        node = self._my_node
        if node is None or not self.connected:
            return
        try:
            self._client.set(node, json.dumps({"replica": self.replica, **self._status}).encode())
        except Exception as exc:
            log.warning("fleet: status not published: %s", exc)

    def statuses(self) -> dict[str, dict[str, Any]]:
        """Every live replica's published status, by name."""
        self._need_session()
        members = self.node("members")
        found: dict[str, dict[str, Any]] = {}
        for child in self._client.get_children(members):
            try:
                data, _ = self._client.get(f"{members}/{child}")
                status = decode_object(data, f"{members}/{child}")
            except (NoNodeError, ValueError):  # ValueError: MalformedNode, not a replica's status
                continue
            if isinstance(status, dict) and isinstance(status.get("replica"), str):
                found[status["replica"]] = status
        return found

    def _need_session(self) -> None:
        if not self.connected:
            raise KeeperUnavailable(f"fleet coordination is unavailable (Keeper {self.state})")

    def metrics(self) -> dict[str, float]:
        return {
            "fleet_keeper_connected": 1.0 if self.connected else 0.0,
            "fleet_members": float(len(self.members())),
            "fleet_leader": 1.0 if self.is_leader() else 0.0,
            "fleet_session_losses": float(self.session_losses),
            "fleet_membership_changes": float(self.membership_changes),
            "fleet_refused": 1.0 if self.refused else 0.0,
            **self.fence.metrics(),
        }


def keeper_client(config: FleetConfig, **options: Any) -> KazooClient:
    """A Keeper client for this fleet.

    With ``fleet.auth_env`` set, it authenticates by digest and every node it creates carries an ACL that
    admits only that credential.
    """
    credential = config.credential(os.environ)
    if credential is not None:
        user, password = credential
        options["auth_data"] = [("digest", f"{user}:{password}")]
        options["default_acl"] = [make_digest_acl(user, password, all=True)]
    return KazooClient(hosts=config.keeper, timeout=config.session_timeout_s, **options)


def rendezvous_owner(key: str, members: list[str]) -> str:
    """The member with the highest hash of (member, key): stable, and only a leaver's keys move."""
    return max(members, key=lambda member: hashlib.blake2b(f"{member}\0{key}".encode(), digest_size=8).digest())
