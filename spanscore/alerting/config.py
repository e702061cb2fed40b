"""The ``alerts:`` and ``alerting:`` sections: what to watch, when it counts as a real drop, whom to tell."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Aggregate = Literal["mean", "pass_rate", "count", "p50", "version_diff"]
_DURATION = re.compile(r"^(\d+)\s*(s|m|h|d)$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
WHERE_COLUMNS = {
    "rule": "Rule",
    "service.name": "ServiceName",
    "agent.name": "AgentName",
    "model": "Model",
    "source": "Source",
    "target": "Target",
}
"""Keys an alert's ``where`` may use, and the ``scores`` column each one matches exactly."""


def duration_seconds(text: str) -> int:
    match = _DURATION.match(text.strip())
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"must be a duration like 90s, 15m, 1h or 1d, got {text!r}")
    return int(match.group(1)) * _UNITS[match.group(2)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WebhookTarget(_Strict):
    webhook: str = Field(pattern=r"^https?://")
    """Receives the generic JSON payload (docs/alerts.md)."""


class SlackTarget(_Strict):
    slack: str = Field(pattern=r"^https?://")
    """A Slack incoming-webhook URL."""


class PagerDutySettings(_Strict):
    routing_key_env: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Environment variable holding the Events API v2 routing (integration) key; the key is never in the file."""
    url: str = Field("https://events.pagerduty.com/v2/enqueue", pattern=r"^https?://")
    """The Events API v2 endpoint (override for a proxy or a test receiver)."""
    severity: Literal["critical", "error", "warning", "info"] = "error"


class PagerDutyTarget(_Strict):
    pagerduty: PagerDutySettings


NotifyTarget = WebhookTarget | SlackTarget | PagerDutyTarget


class AlertConfig(_Strict):
    """One alert: an aggregate of one scorer's scores over a window, against a threshold."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,100}$")
    scorer: str = Field(min_length=1, max_length=200)
    where: dict[str, str] = {}
    """Exact matches on the score rows: rule, service.name, agent.name, model, source, target."""
    aggregate: Aggregate = "mean"
    window: str = "15m"
    below: float | None = None
    above: float | None = None
    min_samples: int = Field(20, ge=1)
    confidence: float = Field(0.95, gt=0.5, lt=1.0)
    """Two-sided confidence of the interval that must lie entirely beyond the threshold."""
    versions: str = Field("service.version", pattern=r"^[A-Za-z0-9_.:/-]{1,200}$")
    """With ``aggregate: version_diff``: the run attribute naming versions (docs/compare.md). The aggregate is then
    the newest version's weighted mean minus the previous one's (by first score in the window), so ``below: 0``
    fires when the newest is worse with the alert's confidence; min_samples counts the smaller version's runs."""
    notify: list[NotifyTarget] = []

    @field_validator("window")
    @classmethod
    def _window(cls, value: str) -> str:
        duration_seconds(value)
        return value

    @field_validator("where")
    @classmethod
    def _where_keys(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(WHERE_COLUMNS))
        if unknown:
            raise ValueError(f"unknown key(s) {unknown}; use {sorted(WHERE_COLUMNS)}")
        return value

    @model_validator(mode="after")
    def _one_threshold(self) -> AlertConfig:
        if (self.below is None) == (self.above is None):
            raise ValueError("give exactly one of below: or above:")
        return self

    @property
    def window_s(self) -> int:
        return duration_seconds(self.window)

    @property
    def threshold(self) -> float:
        return self.below if self.below is not None else self.above  # type: ignore[return-value]


class AlertingConfig(_Strict):
    interval_s: float = Field(60.0, ge=1.0, le=3600.0)
    """How often every alert is evaluated."""
    dashboard_url: str = ""
    """Base URL of this service's dashboard as people reach it, for links in notifications (empty: no link)."""
    max_attempts: int = Field(5, ge=1, le=20)
    """Delivery attempts per notification (backoff doubles from backoff_s, at most 60 s apart)."""
    backoff_s: float = Field(1.0, ge=0.0, le=60.0)
    timeout_s: float = Field(10.0, gt=0.0, le=60.0)
    max_rows: int = Field(200_000, ge=100)
    """Scores read per evaluation at most (the newest); an alert over more says so in its state."""
