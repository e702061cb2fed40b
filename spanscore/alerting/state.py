"""Where alert states live: the seam between the evaluator and a file (one process) or Keeper (a fleet).

An alert's state says what was last notified, so whoever keeps it decides how many notifications a
transition gets. The evaluator never writes a transition blindly: it **claims** it by saving the new state
against the version it read (compare-and-set). A replica whose write lost to another's re-reads and sends
nothing, so two replicas that both saw the same drop notify it once. A claimed transition carries its
notification (``pending``) until it is delivered: a claimer that dies before sending leaves it for the next
evaluator to send.

``FileAlertState`` is the single-process store (``<spool_dir>/alerts-state.json``, or memory only);
``KeeperAlertState`` (alerting/keeper_state.py) keeps one versioned znode per alert for a fleet.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple, Protocol

log = logging.getLogger(__name__)


@dataclass(slots=True)
class AlertState:
    alert: str
    status: str = "unknown"
    """``firing``, ``ok``, ``insufficient_data`` (fewer than min_samples, not firing) or ``unknown`` (not yet run)."""
    value: float | None = None
    low: float | None = None
    high: float | None = None
    samples: int = 0
    started_at: float | None = None
    last_evaluated: float | None = None
    notified: str = ""
    """The last status claimed for the receivers: ``firing``, ``resolved`` or nothing yet."""
    error: str = ""
    firing_id: str = ""
    """The current (or last) firing's id, ``transition_id(alert, started_at)``; its resolution carries it too."""
    pending: str = ""
    """A claimed notification not yet delivered (``firing`` or ``resolved``); empty once delivered."""
    pending_event: dict[str, Any] | None = None
    """The payload of the pending notification, as claimed, so whoever sends it sends the same thing."""


_FIELDS = frozenset(field.name for field in fields(AlertState))


def state_from_json(name: str, saved: object) -> AlertState:
    """The state saved for ``name``; unknown keys (a newer or older writer) are dropped, missing ones default."""
    if not isinstance(saved, dict):
        return AlertState(name)
    known = {key: value for key, value in saved.items() if key in _FIELDS}
    return AlertState(**{**known, "alert": name})


def transition_id(alert: str, started_at: float | None) -> str:
    """A firing's id: the same on every replica for one firing (its stored start), new for the next one.

    Receivers deduplicate on it (PagerDuty's ``dedup_key``), so a notification sent twice across a leader
    change counts once, while a new firing after a resolution is a new incident.
    """
    digest = hashlib.sha256(f"{alert}\0{started_at!r}".encode()).hexdigest()
    return digest[:16]


class Versioned(NamedTuple):
    state: AlertState
    version: int
    """The store's version of this state; a save names it to succeed only if nobody wrote since."""


class AlertStateStore(Protocol):
    """Alert states kept somewhere every evaluator of the service reads (blocking calls: run them in a thread)."""

    def load(self) -> dict[str, Versioned]:
        """Every stored state by alert name, each with its version."""
        ...

    def save(self, state: AlertState, version: int | None) -> int | None:
        """Store ``state`` if its stored version is still ``version`` (None: not stored yet).

        Returns the new version, or None when another writer got there first (nothing was written).
        """
        ...


class FileAlertState:
    """One process's alert states in a JSON file (``{alert: state}``), or in memory without a path.

    The file is rewritten whole (through a temporary file) on every save; a file that cannot be read or
    written is logged and the states live on in memory, as before the seam existed.
    """

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._states: dict[str, Versioned] = {}
        if path is None or not path.is_file():
            return
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("alert state not restored from %s: %s", path, exc)
            return
        if not isinstance(saved, dict):
            log.warning("alert state not restored from %s: not a JSON object", path)
            return
        self._states = {str(name): Versioned(state_from_json(str(name), fields), 0) for name, fields in saved.items()}

    def load(self) -> dict[str, Versioned]:
        with self._lock:
            return dict(self._states)

    def save(self, state: AlertState, version: int | None) -> int | None:
        with self._lock:
            current = self._states.get(state.alert)
            if (None if current is None else current.version) != version:
                return None
            new_version = 0 if version is None else version + 1
            self._states[state.alert] = Versioned(state, new_version)
            self._write()
            return new_version

    def _write(self) -> None:
        if self._path is None:
            return
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self._path.with_suffix(".tmp")
            states = {name: asdict(stored.state) for name, stored in self._states.items()}
            temporary.write_text(json.dumps(states), encoding="utf-8")
            temporary.replace(self._path)
        except OSError as exc:
            log.warning("alert state not saved to %s: %s", self._path, exc)
