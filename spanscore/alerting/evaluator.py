"""Evaluates every alert on a schedule and notifies once per firing and once per resolution.

An alert **fires** when its window holds at least ``min_samples`` scores and the whole confidence interval of
its aggregate lies beyond the threshold (below ``below:``, above ``above:``): three unlucky samples, or a
window whose interval straddles the threshold, never fire. A firing alert **resolves** when the aggregate's
value is back on the good side of the threshold. Each transition notifies exactly once; the state (and what
was last notified) is kept in ``<spool_dir>/alerts-state.json`` when a spool directory is configured, so a
restart neither repeats a firing notification nor forgets to send the resolution.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spanscore.alerting.config import WHERE_COLUMNS, AlertConfig, AlertingConfig
from spanscore.alerting.links import dashboard_link
from spanscore.alerting.notify import Notifier
from spanscore.alerting.statistics import Estimate, Sample, estimate
from spanscore.metric_keys import metric_key

log = logging.getLogger(__name__)

ReadWindow = Callable[[str, dict[str, str], int, int], list[tuple[float | None, float, str]]]
"""(scorer, {column: value}, window seconds, row limit) -> (score, sample rate, label) rows."""


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
    """The last status sent to the receivers: ``firing``, ``resolved`` or nothing yet."""
    error: str = ""


class AlertEvaluator:
    def __init__(
        self,
        alerts: Sequence[AlertConfig],
        settings: AlertingConfig,
        read_window: ReadWindow,
        notifier: Notifier,
        *,
        state_file: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.alerts = list(alerts)
        self._settings = settings
        self._read = read_window
        self.notifier = notifier
        self._state_file = state_file
        self._clock = clock
        self.states = {alert.name: AlertState(alert.name) for alert in alerts}
        self._restore()
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self.evaluations = 0
        self.evaluation_failures = 0

    async def start(self) -> None:
        if self.alerts:
            self._stopping.clear()
            self._task = asyncio.create_task(self._loop(), name="alert-evaluation")

    async def shutdown(self) -> None:
        self._stopping.set()
        if self._task is not None:
            await self._task
            self._task = None
        await self.notifier.drain()

    async def _loop(self) -> None:
        while not self._stopping.is_set():
            await self.evaluate_all()
            try:
                await asyncio.wait_for(self._stopping.wait(), self._settings.interval_s)
            except TimeoutError:
                pass

    async def evaluate_all(self) -> list[AlertState]:
        for alert in self.alerts:
            await self.evaluate(alert)
        self._save()
        return list(self.states.values())

    async def evaluate(self, alert: AlertConfig) -> AlertState:
        state = self.states[alert.name]
        where = {WHERE_COLUMNS[key]: value for key, value in alert.where.items()}
        try:
            rows = await asyncio.to_thread(self._read, alert.scorer, where, alert.window_s, self._settings.max_rows)
        except Exception as exc:
            self.evaluation_failures += 1
            state.error = f"{type(exc).__name__}: {exc}"
            log.warning("alert %s not evaluated: %s", alert.name, state.error)
            return state
        self.evaluations += 1
        found = estimate(alert.aggregate, [Sample(score, rate, label) for score, rate, label in rows], alert.confidence)
        now = self._clock()
        state.value, state.samples = found.value, found.samples
        state.low, state.high = _finite(found.low), _finite(found.high)  # None: no interval yet (one score)
        state.last_evaluated, state.error = now, ""
        if len(rows) >= self._settings.max_rows:
            state.error = f"window holds more than {self._settings.max_rows} scores; the newest were read"
        if state.status == "firing":
            if _back(alert, found):
                state.status = "ok"
                self._send(alert, state, "resolved", now)
        elif _beyond(alert, found):
            state.status, state.started_at = "firing", now
            self._send(alert, state, "firing", now)
        else:
            state.status = "ok" if found.samples >= alert.min_samples else "insufficient_data"
        return state

    def _send(self, alert: AlertConfig, state: AlertState, status: str, now: float) -> None:
        if state.notified == status or (status == "resolved" and state.notified != "firing"):
            return  # never twice for one firing; no resolution for a firing nobody was told of
        log.warning(
            "alert %s %s value=%s interval=[%s, %s] samples=%d",
            alert.name, status, state.value, state.low, state.high, state.samples,
        )  # fmt: skip
        state.notified = status
        self.notifier.notify(alert, self.event(alert, state, status, now))

    def event(self, alert: AlertConfig, state: AlertState, status: str, now: float) -> dict[str, Any]:
        """The generic webhook payload (Slack's and PagerDuty's are built from it)."""
        return {
            "alert": alert.name,
            "status": status,
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

    def _restore(self) -> None:
        if self._state_file is None or not self._state_file.is_file():
            return
        try:
            saved = json.loads(self._state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("alert state not restored from %s: %s", self._state_file, exc)
            return
        for name, fields in saved.items():
            if name in self.states and isinstance(fields, dict):
                known = {key: value for key, value in fields.items() if key in AlertState.__slots__}
                self.states[name] = AlertState(**{**known, "alert": name})

    def _save(self) -> None:
        if self._state_file is None:
            return
        try:
            self._state_file.parent.mkdir(parents=True, exist_ok=True)
            temporary = self._state_file.with_suffix(".tmp")
            temporary.write_text(json.dumps({n: asdict(s) for n, s in self.states.items()}), encoding="utf-8")
            temporary.replace(self._state_file)
        except OSError as exc:
            log.warning("alert state not saved to %s: %s", self._state_file, exc)


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
