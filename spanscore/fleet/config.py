"""The ``fleet:`` section: where this replica finds Keeper, and its name among the replicas.

Unset (the default) is the single process: nothing is coordinated and no coordination service is needed.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator

from spanscore.errors import ConfigError

_HOST = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}$")


class FleetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keeper: str = Field(min_length=1)
    """``host:port[,host:port...]`` of ClickHouse Keeper or ZooKeeper, optionally followed by a chroot
    (``/path``): the same string a ZooKeeper client takes."""
    path: str = "/spanscore"
    """Every node of this fleet lives under this path; two fleets on one Keeper use two paths."""
    replica: str = ""
    """This replica's name among its fleet; empty means the host name (a StatefulSet pod's name is stable,
    so a restarted pod takes up its own place)."""
    auth_env: str = Field("", pattern=r"^([A-Za-z_][A-Za-z0-9_]*)?$")
    """Name of an environment variable holding ``user:password`` for Keeper's digest scheme. Set, every node
    this fleet creates is readable and writable only with that credential (docs/security.md, "A fleet's
    Keeper"); empty, the nodes are open to any Keeper client (Keeper's default ACL)."""
    session_timeout_s: float = Field(10.0, ge=2.0, le=60.0)
    """How long Keeper waits for a silent replica before its sessions move to the others."""
    turn_poll_s: float = Field(2.0, gt=0.0, le=60.0)
    """How often a session's owner reads the turns other replicas stored for the sessions it owns."""
    expected_replicas: int = Field(3, ge=1, le=1000)
    """How many replicas this fleet runs (at least). A lease is a slice of an equal part among this many and
    the live members, whichever is more; and a replica cut from Keeper for longer than ``session_timeout_s``
    spends at most ``1/expected_replicas`` of what its fleet had left (the local share). Set it to the replica
    count: too low lets replicas cut from Keeper together spend more than the limit."""
    share_sync_s: float = Field(5.0, gt=0.0, le=300.0)
    """How often each replica reads the fleet's spend from the shared store to size its budget share."""

    @field_validator("keeper")
    @classmethod
    def _hosts(cls, value: str) -> str:
        hosts, _, chroot = value.partition("/")
        bad = [host for host in hosts.split(",") if not _HOST.match(host.strip())]
        if bad:
            raise ValueError(f"fleet.keeper: {', '.join(map(repr, bad))} is not host:port (e.g. keeper-0:9181)")
        if chroot and not re.match(r"^[A-Za-z0-9_.\-/]+$", chroot):
            raise ValueError(f"fleet.keeper: the chroot /{chroot!r} has characters a node path cannot hold")
        return value

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not re.match(r"^(/[A-Za-z0-9_.\-]+)+$", value):
            raise ValueError(f"fleet.path: {value!r} must be an absolute node path like /spanscore")
        return value

    @field_validator("replica")
    @classmethod
    def _replica(cls, value: str) -> str:
        if value and not _NAME.match(value):
            raise ValueError(f"fleet.replica: {value!r} must be letters, digits, '.', '_' or '-' (at most 63)")
        return value

    def credential(self, environ: Mapping[str, str]) -> tuple[str, str] | None:
        """``(user, password)`` from ``auth_env``; ``ConfigError`` naming the variable when it is unusable."""
        if not self.auth_env:
            return None
        value = environ.get(self.auth_env, "")
        user, sep, password = value.partition(":")
        if not sep or not user or not password:
            raise ConfigError(
                f"fleet.auth_env: environment variable {self.auth_env} must hold user:password for Keeper"
                + (" (it is not set)" if self.auth_env not in environ else "")
            )
        return user, password

    def require_shared_store(self, dsn: str) -> None:
        """``ConfigError`` unless ``dsn`` names a ClickHouse server: replicas share turns, scores and spend there.

        An embedded store (``chdb:``, or no DSN, which is ``storage.data_dir``) belongs to one process: each
        replica would see only the turns sent to it, so a session split across replicas is scored in parts.
        """
        if not dsn or dsn.startswith("chdb:"):
            shown = (
                "storage.dsn is empty (the embedded store in storage.data_dir)" if not dsn else f"storage.dsn is {dsn}"
            )
            raise ConfigError(
                f"fleet: a fleet needs one shared ClickHouse server, but {shown}: each replica would keep its own "
                "store and score sessions from the turns it alone received; set storage.dsn to the server every "
                "replica uses (clickhouse://user:password@host:8123/), or remove the fleet: section"
            )

    def keeper_path(self) -> str:
        """Where this fleet's nodes live on its Keeper, chroot included: what tells two fleets on one Keeper apart.

        The hosts are left out (replicas may list them differently); two Keeper ensembles with the same path
        look alike here.
        """
        chroot = self.keeper.partition("/")[2].strip("/")
        return ("/" + chroot if chroot else "") + self.path.rstrip("/")

    def replica_name(self) -> str:
        """The configured name, or this host's name made safe for a node path."""
        if self.replica:
            return self.replica
        name = re.sub(r"[^A-Za-z0-9_.\-]", "-", socket.gethostname())[:63].strip("-.")
        return name or "replica"
