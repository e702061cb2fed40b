"""Delivering alert notifications: a generic webhook, Slack and PagerDuty Events v2, retried with backoff.

Each notification is sent in its own task so a slow or failing receiver never holds up the evaluation of
other alerts. A delivery is retried up to ``alerting.max_attempts`` times (backoff doubling from
``alerting.backoff_s``, at most 60 s); every outcome is counted per channel. Once every receiver of a
notification has had its attempts, ``on_done`` runs (the evaluator clears the transition's ``pending``
mark); a delivery cut short (shutdown, a dead process) never runs it, so the mark stays for the next sender.

Every payload carries the transition's id: receivers deduplicate on it when a notification is sent again
after a leader change (PagerDuty's ``dedup_key`` is ``spanscore/<alert>/<firing id>``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp

from spanscore.alerting.config import AlertConfig, AlertingConfig, NotifyTarget, PagerDutyTarget, SlackTarget

log = logging.getLogger(__name__)


def channel_of(target: NotifyTarget) -> str:
    if isinstance(target, SlackTarget):
        return "slack"
    if isinstance(target, PagerDutyTarget):
        return "pagerduty"
    return "webhook"


def slack_payload(event: Mapping[str, Any]) -> dict[str, Any]:
    verb = "FIRING" if event["status"] == "firing" else "resolved"
    interval = event["interval"]
    text = (
        f"[{verb}] {event['alert']}: {event['aggregate']} of {event['scorer']} = {_num(event['value'])} "
        f"({event['direction']} {event['threshold']:g}; {event['confidence']:.0%} interval "
        f"{_num(interval['low'])}-{_num(interval['high'])}, {event['samples']} scores in {event['window']})"
    )
    if event.get("dashboard"):
        text += f" <{event['dashboard']}|dashboard>"
    if event.get("id"):
        text += f" [id {event['id']}]"
    return {"text": text}


def pagerduty_payload(event: Mapping[str, Any], settings: Any, routing_key: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger" if event["status"] == "firing" else "resolve",
        "dedup_key": dedup_key(event),
    }
    if event["status"] == "firing":
        body["payload"] = {
            "summary": slack_payload(event)["text"][:1024],
            "source": "spanscore",
            "severity": settings.severity,
            "custom_details": dict(event),
        }
        if event.get("dashboard"):
            body["links"] = [{"href": event["dashboard"], "text": "spanscore dashboard"}]
    return body


def dedup_key(event: Mapping[str, Any]) -> str:
    """One incident per firing: its resolution resolves it; the next firing (a new id) opens a new one."""
    firing = event.get("transition_id")
    return f"spanscore/{event['alert']}/{firing}" if firing else f"spanscore/{event['alert']}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


class Notifier:
    def __init__(self, settings: AlertingConfig, environ: Mapping[str, str] | None = None) -> None:
        self._settings = settings
        self._environ = os.environ if environ is None else environ
        self._tasks: set[asyncio.Task[None]] = set()
        self.sent: Counter[tuple[str, str]] = Counter()  # (alert, channel)
        self.failed: Counter[tuple[str, str]] = Counter()
        self.retries = 0

    def notify(
        self,
        alert: AlertConfig,
        event: Mapping[str, Any],
        on_done: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Send ``event`` to every receiver of ``alert`` in the background, then run ``on_done``."""
        task = asyncio.get_running_loop().create_task(self._deliver_all(alert, event, on_done))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver_all(
        self, alert: AlertConfig, event: Mapping[str, Any], on_done: Callable[[], Awaitable[None]] | None
    ) -> None:
        outcomes = await asyncio.gather(
            *(self._deliver(alert.name, target, event) for target in alert.notify), return_exceptions=True
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                log.error("alert %s: delivery failed unexpectedly: %r", alert.name, outcome)
        if on_done is not None:
            try:
                await on_done()
            except Exception:
                log.exception("alert %s: after delivery", alert.name)

    async def drain(self, timeout_s: float = 10.0) -> None:
        """Wait for deliveries under way (tests, shutdown); those still retrying after ``timeout_s`` are cut."""
        if not self._tasks:
            return
        _, pending = await asyncio.wait(list(self._tasks), timeout=timeout_s)
        for task in pending:
            task.cancel()

    async def _deliver(self, alert: str, target: NotifyTarget, event: Mapping[str, Any]) -> None:
        channel = channel_of(target)
        try:
            url, body = self._request(target, event)
        except KeyError as exc:
            self.failed[alert, channel] += 1
            log.error("alert %s: %s notification not sent: environment variable %s is not set", alert, channel, exc)
            return
        delay = self._settings.backoff_s
        for attempt in range(1, self._settings.max_attempts + 1):
            problem = await self._post(url, body)
            if problem is None:
                self.sent[alert, channel] += 1
                log.info("alert %s: %s notified status=%s", alert, channel, event["status"])
                return
            if isinstance(problem, _Refused):
                self.failed[alert, channel] += 1
                log.error("alert %s: %s notification not sent: %s", alert, channel, problem)
                return
            if attempt < self._settings.max_attempts:
                self.retries += 1
                log.warning("alert %s: %s delivery failed (%s), retrying in %.1fs", alert, channel, problem, delay)
                await asyncio.sleep(delay)
                delay = min(60.0, max(delay * 2, 0.01))
            else:
                self.failed[alert, channel] += 1
                log.error("alert %s: %s delivery failed %d times: %s", alert, channel, attempt, problem)

    def _request(self, target: NotifyTarget, event: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        if isinstance(target, SlackTarget):
            return target.slack, slack_payload(event)
        if isinstance(target, PagerDutyTarget):
            key = self._environ[target.pagerduty.routing_key_env]
            return target.pagerduty.url, pagerduty_payload(event, target.pagerduty, key)
        return target.webhook, dict(event)

    async def _post(self, url: str, body: dict[str, Any]) -> str | None:
        """None when delivered; else why not (a ``_Refused`` one is not worth retrying).

        Redirects are not followed: a notification (and a PagerDuty routing key) goes to the address the
        config file names and nowhere else, whatever that address answers (docs/security.md).
        """
        timeout = aiohttp.ClientTimeout(total=self._settings.timeout_s)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.post(url, json=body, allow_redirects=False) as response,
            ):
                if 200 <= response.status < 300:
                    return None
                if 300 <= response.status < 400:
                    where = response.headers.get("Location", "?")
                    return _Refused(
                        f"HTTP {response.status} redirect to {where!r} not followed: notifications go only to the "
                        "configured address (configure the final address instead)"
                    )
                return f"HTTP {response.status}"
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return f"{type(exc).__name__}: {exc}"


class _Refused(str):
    """A delivery problem that another attempt cannot fix (a redirect the notifier will not follow)."""
