"""The one fence: what a replica may still do when it cannot prove its Keeper session is live.

Ownership in a fleet is a view of Keeper's member list. A replica cut from Keeper, or paused (SIGSTOP, a long
GC, a frozen VM), keeps the last list it saw, while Keeper ends its session after ``session_timeout_s`` and
the others take its sessions over. Without a fence both would score them: a second judge bill, and an older
score that may replace a newer one.

Two things make the fence, in the manner of ZooKeeper's recipes and Kafka's producer epochs:

- **a lease on a clock that counts suspend** (``lease_clock``: CLOCK_BOOTTIME on Linux, else monotonic). A
  round trip that finds this replica's member node still owned by its session proves the session was live when
  the request was sent; Keeper cannot end it before a full ``session_timeout_s`` of silence after that. The
  lease runs for a part of that timeout from the send, so a cut or a pause (the clock keeps running while a
  process is stopped, and while its host or VM is suspended, which CLOCK_MONOTONIC does not count) expires it
  before anyone can have taken over. Keeper may grant a shorter timeout than asked (its own minimum and
  maximum): docs/deployment.md says to keep ``session_timeout_s`` within them.
- **a token from Keeper**: the session id and the creation zxid of the member node. A rejoin after a lost
  session gets a new node, so a token taken before the loss is outdated for good.

Components ask one question, "may I still?": ``grant(key)`` at assignment (live, and this replica owns the
key), and ``still(grant)`` where the result is written (still live, same token, still the owner). A result
whose grant is no longer good is refused.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spanscore.fleet.coordinator import Fleet

log = logging.getLogger(__name__)


def lease_clock() -> float:
    """Seconds on a clock that keeps counting while the host sleeps: Keeper's timeout runs on during a suspend."""
    return time.clock_gettime(_BOOTTIME) if _BOOTTIME is not None else time.monotonic()


_BOOTTIME: int | None = getattr(time, "CLOCK_BOOTTIME", None)

LEASE_SHARE = 0.6
"""The lease lasts this share of the session timeout from the send of the round trip that proved it: the rest
is margin for clock rates and for the work between a check and its write."""
RENEW_SHARE = 0.15
"""A round trip every this share of the session timeout: several renewals fit in one lease."""


@dataclass(frozen=True, slots=True)
class FenceToken:
    """Which Keeper session, and which membership of it, a grant was made under."""

    session_id: int
    member_zxid: int
    """The creation zxid of this replica's member node: a rejoin after a lost session makes a larger one."""


@dataclass(frozen=True, slots=True)
class Grant:
    """Leave to act on ``key`` (e.g. ``session:<id>``) under ``token``; checked again with ``Fence.still``."""

    key: str
    token: FenceToken


class Fence:
    """The lease and token of one replica; renewed by a thread of its own (Keeper calls block)."""

    def __init__(self, fleet: Fleet) -> None:
        self._fleet = fleet
        timeout = fleet.config.session_timeout_s
        self._lease_s = timeout * LEASE_SHARE
        self._renew_s = timeout * RENEW_SHARE
        self._lock = threading.Lock()
        self._token: FenceToken | None = None
        self._lease_until = 0.0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.proven_at: float | None = None
        """When (``lease_clock``) the last round trip that proved the session was sent: Keeper cannot have ended
        the session before ``session_timeout_s`` after it, and may have from then on."""
        self.renewals = 0
        self.refusals = 0
        """Grants asked for or checked while the fence said no (metrics: ``fleet_fence_refusals``)."""

    # -- the questions -------------------------------------------------------------------------------------

    def live(self) -> bool:
        """Whether this replica proved its Keeper session live within the lease: its last-seen ownership holds."""
        with self._lock:
            return self._token is not None and lease_clock() < self._lease_until

    def token(self) -> FenceToken | None:
        """The current token while live; None when this replica may not act on what it owned."""
        with self._lock:
            if self._token is None or lease_clock() >= self._lease_until:
                return None
            return self._token

    def grant(self, key: str) -> Grant | None:
        """Leave to act on ``key`` now: live, and this replica its owner; None (counted) otherwise."""
        token = self.token()
        if token is None or not self._fleet.owns(key):
            self.refusals += 1
            return None
        return Grant(key, token)

    def still(self, grant: Grant) -> bool:
        """Whether ``grant`` still holds where its result is written: same live token, same owner."""
        if self.token() == grant.token and self._fleet.owns(grant.key):
            return True
        self.refusals += 1
        return False

    # -- the lease -----------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._renew_loop, name="fleet-fence", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """End the lease at once (a replica that leaves acts on nothing it owned) and stop renewing."""
        self._stopping.set()
        self.revoke()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=0.5)  # a round trip in flight ends with the client; its answer is ignored

    def revoke(self) -> None:
        """The session is gone (or being given up): nothing is granted until a round trip proves a new one."""
        with self._lock:
            self._token = None
            self._lease_until = 0.0

    def _renew_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self.renew()
            except Exception as exc:  # Keeper unreachable: the lease runs out on its own
                log.debug("fleet: fence not renewed: %s", exc)
            self._stopping.wait(self._renew_s)

    def renew(self) -> bool:
        """One round trip to Keeper; extends the lease when this replica's member node is still its session's."""
        found = self._fleet.member_stat(timeout_s=self._lease_s)
        if found is None:
            return False
        sent, session_id, stat = found
        if stat is None or int(stat.ephemeralOwner) != session_id:
            self.revoke()  # the node is gone or another session's: the old token is outdated for good
            return False
        token = FenceToken(session_id, int(stat.czxid))
        with self._lock:
            if self._stopping.is_set():
                return False  # stopped (left the fleet) while the round trip was out: grant nothing again
            if token != self._token:
                log.info("fleet: fence token now session=%#x member_zxid=%d", session_id, token.member_zxid)
                self._token, self._lease_until = token, 0.0
            self._lease_until = max(self._lease_until, sent + self._lease_s)
            self.proven_at = sent if self.proven_at is None else max(self.proven_at, sent)
        self.renewals += 1
        return True

    def wait_live(self, timeout_s: float, *, check: Callable[[], bool] | None = None) -> bool:
        """Block until the fence is live (and ``check`` passes), at most ``timeout_s``; for tests and tools."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.live() and (check is None or check()):
                return True
            time.sleep(0.05)
        return self.live()

    def metrics(self) -> dict[str, float]:
        return {
            "fleet_fence_live": 1.0 if self.live() else 0.0,
            "fleet_fence_refusals": float(self.refusals),
        }
