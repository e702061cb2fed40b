"""A fleet's record of alert deliveries, consulted before a claimed notification is sent (docs/alerts.md).

Keeper's ``pending`` mark says a notification is owed; it cannot say whether a replica cut from Keeper is
still delivering it, or delivered it and could not clear the mark. The shared store can: the sender records
``sending`` before its first attempt and ``done`` after its last (``storage.fleet_records``), and whoever
finds the mark asks here first. The same record keeps a firing's id when Keeper forgets its state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from spanscore.alerting.config import AlertingConfig


class DeliveryLog(Protocol):
    """Where a fleet records each notification's phases; blocking calls."""

    def mark(self, event: Mapping[str, Any], phase: str, started_at: float) -> None: ...

    def phases(self, delivery_id: str) -> dict[str, tuple[str, float]]: ...

    def last_firing(self, alert: str) -> tuple[str, float] | None: ...


def longest_delivery_s(settings: AlertingConfig) -> float:
    """How long one notification's delivery can take: every attempt's timeout, every backoff between, 1 s."""
    backoffs, delay = 0.0, settings.backoff_s
    for _ in range(settings.max_attempts - 1):
        backoffs, delay = backoffs + delay, min(60.0, max(delay * 2, 0.01))
    return settings.max_attempts * settings.timeout_s + backoffs + 1.0


async def claim_delivery(
    log: DeliveryLog,
    event: Mapping[str, Any],
    started: float | None,
    settings: AlertingConfig,
    now: Callable[[], float],
) -> tuple[Literal["send", "sent", "wait"], str]:
    """``send`` (recorded as ``sending`` now), ``sent`` (by the replica named), or ``wait`` (another is on it).

    Raises when the store cannot be read or written: the caller sends nothing then, rather than risk a repeat.
    """
    seen = await asyncio.to_thread(log.phases, str(event["id"]))
    if "done" in seen:
        return "sent", seen["done"][0]
    if "sending" in seen and now() - seen["sending"][1] < longest_delivery_s(settings):
        return "wait", seen["sending"][0]
    await asyncio.to_thread(log.mark, event, "sending", started or 0.0)
    return "send", ""


async def record_delivered(log: DeliveryLog, event: Mapping[str, Any], started: float | None) -> None:
    await asyncio.to_thread(log.mark, event, "done", started or 0.0)


async def recorded_firing(log: DeliveryLog, alert: str) -> tuple[str, float] | None:
    """The newest recorded transition of ``alert`` when it is a firing: (its id, its start)."""
    return await asyncio.to_thread(log.last_firing, alert)
