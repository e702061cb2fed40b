"""Evaluates every alert on a schedule and notifies once per firing and once per resolution.

An alert **fires** when its window holds at least ``min_samples`` scores and the whole confidence interval of
its aggregate lies beyond the threshold (below ``below:``, above ``above:``): three unlucky samples, or a
window whose interval straddles the threshold, never fire. A firing alert **resolves** when the aggregate's
value is back on the good side of the threshold.

The states live in a store (alerting/state.py): ``<spool_dir>/alerts-state.json`` for one process, Keeper
for a fleet. Only the replica for which ``leader()`` is true evaluates; the others read the stored states,
so any replica shows the fleet's alerts. Leadership may move at any moment, so a transition is claimed in
the store (compare-and-set) before it is notified: a replica whose claim lost re-reads and sends nothing.
The claim carries the notification as ``pending`` until it has been delivered, so a leader that dies in
between leaves it to the next one: every transition is notified at least once, and its id (the same on
every replica) lets receivers drop a repeat.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spanscore.alerting.config import WHERE_COLUMNS, AlertConfig, AlertingConfig
from spanscore.alerting.deliveries import DeliveryLog, claim_delivery, record_delivered, recorded_firing
from spanscore.alerting.links import dashboard_link
from spanscore.alerting.notify import Notifier
from spanscore.alerting.state import AlertState, AlertStateStore, FileAlertState, Versioned, transition_id
from spanscore.alerting.statistics import Estimate, Sample, estimate
from spanscore.alerting.version_alert import newest_against_previous
from spanscore.metric_keys import metric_key
from spanscore.pipeline import Background

log = logging.getLogger(__name__)

ReadWindow = Callable[..., list[tuple[Any, ...]]]
"""(scorer, {column: value}, window seconds, row limit[, version attribute]) -> (score, sample rate, label) rows,
with the run's version and start time added when a version attribute is given (storage.reads.alerts)."""

__all__ = ["AlertEvaluator", "AlertState", "ReadWindow"]


def _always() -> bool:
    return True


class AlertEvaluator:
    def __init__(
        self,
        alerts: Sequence[AlertConfig],
        settings: AlertingConfig,
        read_window: ReadWindow,
        notifier: Notifier,
        *,
        state: AlertStateStore | None = None,
        state_file: Path | None = None,
        leader: Callable[[], bool] = _always,
        ready: Callable[[], bool] = _always,
        deliveries: DeliveryLog | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``state`` is where states live (a fleet passes Keeper's); without it, ``state_file`` or memory.

        ``leader`` says whether this replica evaluates now; the single-process default always does. ``ready``
        says whether ``state`` can answer now (a fleet: Keeper connected); until it can, rounds read nothing
        and log nothing (the replica's /readyz and ``spanscore status`` say it is degraded).
        """
        if state is not None and state_file is not None:
            raise ValueError("AlertEvaluator: give state (a store) or state_file, not both")
        self.alerts = list(alerts)
        self._settings = settings
        self._read = read_window
        self.notifier = notifier
        self._store: AlertStateStore = state if state is not None else FileAlertState(state_file)
        self._leader = leader
        self._clock = clock
        self.states = {alert.name: AlertState(alert.name) for alert in alerts}
        self._versions: dict[str, int] = {}
        self._delivering: set[tuple[str, str, str]] = set()  # (alert, firing id, status) sent from here
        self._ready = ready
        self._deliveries = deliveries
        self._recalled: set[str] = set()
        """A fleet's record of notifications in the store: checked before a claimed one is sent."""
        if state is None and self.alerts:  # the file's states show at once; a shared store is read each round
            self._adopt(self._store.load())
        self._background = Background("alert-evaluation")
        self._round = asyncio.Lock()
        self.evaluations = 0
        self.evaluation_failures = 0

    async def start(self) -> None:
        if self.alerts:
            self._background.start(self._loop)

    async def shutdown(self) -> None:
        await self._background.stop()
        await self.notifier.drain()

    async def _loop(self) -> None:
        while not self._background.stopping.is_set():
            await self.evaluate_all()
            try:
                await asyncio.wait_for(self._background.stopping.wait(), self._settings.interval_s)
            except TimeoutError:
                pass

    async def evaluate_all(self) -> list[AlertState]:
        """One round: the leader evaluates every alert; any other replica only reads the stored states.

        Rounds run one at a time: one asked for while another runs (the loop's, started with the service)
        waits for it and then reads the store itself. Run together, the earlier round, which read the store
        first, could finish last and put its older state back over the later one's.
        """
        async with self._round:
            if await self.refresh():
                for alert in self.alerts:
                    if not self._leads():
                        break  # leadership moved mid-round: the new leader evaluates the rest
                    await self.evaluate(alert)
            return list(self.states.values())

    def _leads(self) -> bool:
        try:
            return self._leader()
        except Exception as exc:  # a leadership check that fails is no leadership: claims keep it safe anyway
            log.warning("alert leadership not known (%s: %s); not evaluating", type(exc).__name__, exc)
            return False

    async def refresh(self) -> bool:
        """Read the stored states; False when the store cannot be read (nothing is evaluated then)."""
        if not self._ready():
            return False
        try:
            stored = await asyncio.to_thread(self._store.load)
            if self._deliveries is not None:
                await self._recall_forgotten(stored)
            self._adopt(stored)
        except Exception as exc:
            self.evaluation_failures += 1
            log.warning("alert states not read: %s: %s", type(exc).__name__, exc)
            return False
        return True

    async def _recall_forgotten(self, stored: dict[str, Versioned]) -> None:
        """An alert Keeper has no state for, whose newest recorded notification is a firing, is still firing.

        Under that firing's id, so a Keeper that lost its data (or a new fleet on an old store) opens no new
        incident; looked up once per process and alert.
        """
        for name, known in list(self.states.items()):
            if name in stored or known.status == "firing" or name in self._recalled:
                continue
            self._recalled.add(name)  # once per process and alert: the leader's next save stores what is found
            assert self._deliveries is not None
            found = await recorded_firing(self._deliveries, name)
            if found is not None:
                firing_id, started_at = found
                self.states[name] = replace(
                    known, status="firing", firing_id=firing_id, started_at=started_at, notified="firing"
                )
                self._versions.pop(name, None)
                log.warning("alert %s: Keeper had no state; still firing as id=%s (from the store)", name, firing_id)

    def _adopt(self, stored: dict[str, Versioned], *, newest: str = "") -> None:
        """Take the stored states; an older read than what is known is ignored, except for ``newest``.

        ``newest`` names an alert whose save just lost: the store holds the truth for it, whatever its
        version (a znode deleted and created again starts its versions over).
        """
        if newest and newest not in stored:
            self._versions.pop(newest, None)  # deleted from the store: the next save creates it
        for name, (state, version) in stored.items():
            known = self._versions.get(name)
            if name in self.states and (known is None or version > known or name == newest):
                self.states[name], self._versions[name] = state, version

    async def evaluate(self, alert: AlertConfig) -> AlertState:
        current = self.states[alert.name]
        if current.pending and current.pending_event is not None:
            await self._deliver(alert, current)  # a claimed notification first (perhaps a dead leader's)
            return current
        state = replace(current, pending="", pending_event=None)  # a mark without its payload cannot be sent
        where = {WHERE_COLUMNS[key]: value for key, value in alert.where.items()}
        try:
            versions = (alert.versions,) if alert.aggregate == "version_diff" else ()
            rows = await asyncio.to_thread(
                self._read, alert.scorer, where, alert.window_s, self._settings.max_rows, *versions
            )
        except Exception as exc:
            self.evaluation_failures += 1
            current.error = f"{type(exc).__name__}: {exc}"
            log.warning("alert %s not evaluated: %s", alert.name, current.error)
            return current
        self.evaluations += 1
        if versions:
            found = newest_against_previous(rows, alert.confidence)
        else:
            found = estimate(alert.aggregate, [Sample(r[0], r[1], r[2]) for r in rows], alert.confidence)
        now = self._clock()
        state.value, state.samples = found.value, found.samples
        state.low, state.high = _finite(found.low), _finite(found.high)  # None: no interval yet (one score)
        state.last_evaluated, state.error = now, ""
        if len(rows) >= self._settings.max_rows:
            state.error = f"window holds more than {self._settings.max_rows} scores; the newest were read"
        if state.status == "firing":
            if _back(alert, found):
                state.status = "ok"
                self._claim(alert, state, "resolved", now)
        elif _beyond(alert, found):
            state.status, state.started_at = "firing", now
            state.firing_id = transition_id(alert.name, now)
            self._claim(alert, state, "firing", now)
        else:
            state.status = "ok" if found.samples >= alert.min_samples else "insufficient_data"
        return await self._store_and_send(alert, state)

    def _claim(self, alert: AlertConfig, state: AlertState, status: str, now: float) -> None:
        """Mark the notification in the state to be saved: it is sent only if this save wins."""
        if state.notified == status or (status == "resolved" and state.notified != "firing"):
            return  # never twice for one firing; no resolution for a firing nobody was told of
        if not state.firing_id:  # a firing stored before firings had ids
            state.firing_id = transition_id(alert.name, state.started_at)
        state.notified, state.pending = status, status
        state.pending_event = self.event(alert, state, status, now)

    async def _store_and_send(self, alert: AlertConfig, state: AlertState) -> AlertState:
        try:
            version = await asyncio.to_thread(self._store.save, state, self._versions.get(alert.name))
        except Exception as exc:
            self.evaluation_failures += 1
            self.states[alert.name].error = f"state not saved ({type(exc).__name__}: {exc}); nothing notified"
            log.warning("alert %s: %s", alert.name, self.states[alert.name].error)
            return self.states[alert.name]
        if version is None:
            log.info("alert %s: another replica wrote its state first; re-reading, sending nothing", alert.name)
            try:
                self._adopt(await asyncio.to_thread(self._store.load), newest=alert.name)
            except Exception as exc:
                log.warning("alert states not read: %s: %s", type(exc).__name__, exc)
            return self.states[alert.name]
        self.states[alert.name], self._versions[alert.name] = state, version
        if state.pending:
            await self._deliver(alert, state)
        return state

    async def _deliver(self, alert: AlertConfig, state: AlertState) -> None:
        key = (alert.name, state.firing_id, state.pending)
        event = state.pending_event
        if key in self._delivering or event is None:
            return  # already on its way from this replica
        if self._deliveries is not None and not await self._first_to_send(key, event, state.started_at):
            return
        self._delivering.add(key)
        log.warning(
            "alert %s %s id=%s value=%s interval=[%s, %s] samples=%d",
            alert.name, state.pending, state.firing_id, state.value, state.low, state.high, state.samples,
        )  # fmt: skip
        self.notifier.notify(alert, event, on_done=lambda: self._delivered(key, event, state.started_at))

    async def _first_to_send(self, key: tuple[str, str, str], event: Mapping[str, Any], started: float | None) -> bool:
        """Whether this replica sends a claimed notification, as the store's record of deliveries says."""
        assert self._deliveries is not None
        try:
            verdict, by = await claim_delivery(self._deliveries, event, started, self._settings, self._clock)
        except Exception as exc:  # without the record a repeat is possible: wait for the store instead
            log.warning("alert %s: delivery record not read or written (%s); sending later", key[0], exc)
            return False
        if verdict == "sent":
            log.info("alert %s: %s id=%s was sent by %s; not again", key[0], key[2], key[1], by)
            self._delivering.add(key)
            await self._delivered(key, None, started)  # clears the mark the sender could not
        return verdict == "send"

    async def _delivered(
        self, key: tuple[str, str, str], event: Mapping[str, Any] | None, started: float | None
    ) -> None:
        """Record the delivery (``event``; a fleet), then clear the ``pending`` mark unless the state moved on."""
        name, firing_id, status = key
        if event is not None and self._deliveries is not None:
            try:
                await record_delivered(self._deliveries, event, started)
            except Exception as exc:
                log.warning("alert %s: delivery of %s not recorded (%s); it may be sent again", name, status, exc)
        try:
            for _ in range(5):  # each lost compare-and-set means another writer; re-read and try again
                stored = (await asyncio.to_thread(self._store.load)).get(name)
                if stored is None or (stored.state.firing_id, stored.state.pending) != (firing_id, status):
                    return
                cleared = replace(stored.state, pending="", pending_event=None)
                version = await asyncio.to_thread(self._store.save, cleared, stored.version)
                if version is not None:
                    self._adopt({name: Versioned(cleared, version)})
                    return
            log.warning("alert %s: delivered %s mark not cleared; it may be sent again", name, status)
        except Exception as exc:
            log.warning("alert %s: delivered %s mark not cleared (%s); it may be sent again", name, status, exc)
        finally:
            self._delivering.discard(key)

    def event(self, alert: AlertConfig, state: AlertState, status: str, now: float) -> dict[str, Any]:
        """The generic webhook payload (Slack's and PagerDuty's are built from it)."""
        return {
            "alert": alert.name,
            "status": status,
            "transition_id": state.firing_id,
            "id": f"{state.firing_id}:{status}",
            "value": state.value,
            "threshold": alert.threshold,
            "direction": "below" if alert.below is not None else "above",
            "aggregate": alert.aggregate,
            "confidence": alert.confidence,
            "interval": {"low": state.low, "high": state.high},
            "samples": state.samples,
            "min_samples": alert.min_samples,
            "window": alert.window,
            "scorer": alert.scorer,
            "where": dict(alert.where),
            "started_at": _iso(state.started_at),
            "resolved_at": _iso(now) if status == "resolved" else None,
            "dashboard": dashboard_link(self._settings.dashboard_url, alert.scorer, alert.window, alert.where),
        }

    def describe(self) -> list[dict[str, Any]]:
        out = []
        for alert in self.alerts:
            state = asdict(self.states[alert.name])
            del state["pending_event"]
            state.update(
                scorer=alert.scorer, aggregate=alert.aggregate, window=alert.window, threshold=alert.threshold,
                direction="below" if alert.below is not None else "above", min_samples=alert.min_samples,
                started_at=_iso(state["started_at"]), last_evaluated=_iso(state["last_evaluated"]),
            )  # fmt: skip
            out.append(state)
        return out

    def metrics(self) -> dict[str, float]:
        out: dict[str, float] = {
            "alert_evaluations": self.evaluations,
            "alert_evaluation_failures": self.evaluation_failures,
            "alert_notification_retries": self.notifier.retries,
        }
        for name, state in self.states.items():
            out[metric_key("alert_firing", alert=name)] = 1 if state.status == "firing" else 0
            if state.value is not None:
                out[metric_key("alert_value", alert=name)] = state.value
            out[metric_key("alert_samples", alert=name)] = state.samples
        for (alert, channel), count in self.notifier.sent.items():
            out[metric_key("alert_notifications_sent", alert=alert, channel=channel)] = count
        for (alert, channel), count in self.notifier.failed.items():
            out[metric_key("alert_notifications_failed", alert=alert, channel=channel)] = count
        return out


def _beyond(alert: AlertConfig, found: Estimate) -> bool:
    if found.samples < alert.min_samples or found.low is None or found.high is None:
        return False
    return found.high < alert.below if alert.below is not None else found.low > alert.threshold


def _back(alert: AlertConfig, found: Estimate) -> bool:
    if found.value is None:
        return False
    return found.value >= alert.below if alert.below is not None else found.value <= alert.threshold


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _iso(seconds: float | None) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat()
