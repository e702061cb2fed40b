"""Alert states in ClickHouse Keeper (or ZooKeeper): one versioned znode per alert, shared by a fleet.

Every replica reads the same states, so ``GET /api/v1/alerts`` on any of them shows the fleet's alerts, and
a transition is claimed with the znode's version: ``set(path, data, version=v)`` fails with
``BadVersionError`` when another replica wrote since ``v`` was read, ``create`` fails with
``NodeExistsError`` when another created it first. Either way the loser writes nothing and sends nothing.

A znode is named ``alert-<name>``: alert names may be ``.`` or ``..``, which are not valid znode names.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from spanscore.alerting.state import AlertState, Versioned, state_from_json
from spanscore.fleet.documents import MalformedNode, decode_object

log = logging.getLogger(__name__)
_PREFIX = "alert-"


class KeeperAlertState:
    """``AlertStateStore`` over a started kazoo ``KazooClient``; its calls block, so run them in a thread."""

    def __init__(self, client: Any, base_path: str) -> None:
        if not base_path.startswith("/") or base_path.endswith("/") or "//" in base_path:
            raise ValueError(
                f"alert state base path must be an absolute znode path like /spanscore/alerts, got {base_path!r}"
            )
        self._client = client
        self._base = base_path

    def _path(self, alert: str) -> str:
        return f"{self._base}/{_PREFIX}{alert}"

    def load(self) -> dict[str, Versioned]:
        try:
            children = self._client.get_children(self._base)
        except NoNodeError:
            return {}
        states: dict[str, Versioned] = {}
        for child in children:
            if not child.startswith(_PREFIX):
                continue
            name = child.removeprefix(_PREFIX)
            try:
                data, stat = self._client.get(f"{self._base}/{child}")
            except NoNodeError:
                continue  # deleted between the listing and the read: not stored
            try:
                saved = decode_object(data, f"{self._base}/{child}")
            except MalformedNode as exc:
                log.warning("alert state %s/%s unreadable (%s): it will be overwritten", self._base, child, exc)
                saved = None
            states[name] = Versioned(state_from_json(name, saved), int(stat.version))
        return states

    def save(self, state: AlertState, version: int | None) -> int | None:
        data = json.dumps(asdict(state)).encode("utf-8")
        path = self._path(state.alert)
        try:
            if version is None:
                self._client.create(path, data, makepath=True)
                return 0
            stat = self._client.set(path, data, version=version)
        except (BadVersionError, NodeExistsError, NoNodeError):
            return None
        return int(stat.version)
