"""Alerts end to end: scores in the store, the service's evaluator, real HTTP receivers on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from spanscore.alerting.config import AlertConfig
from spanscore.config import ServiceConfig
from spanscore.server.service import Service
from tests.e2e.alert_parts import Receiver, score_rows


@pytest.fixture
async def receivers() -> AsyncIterator[list[Receiver]]:
    made = [Receiver(), Receiver(), Receiver(fail_first=2)]
    for receiver in made:
        await receiver.start()
    yield made
    for receiver in made:
        await receiver.stop()


async def test_an_alert_fires_once_and_resolves_once(
    service_config: ServiceConfig, receivers: list[Receiver], monkeypatch: pytest.MonkeyPatch
) -> None:
    webhook, slack, pagerduty = receivers
    monkeypatch.setenv("PD_KEY_FOR_TEST", "routing-key-123")
    alert = {
        "name": "faithfulness-drop", "scorer": "faithfulness",
        "where": {"rule": "support-quality", "service.name": "support-bot"},
        "aggregate": "mean", "window": "15m", "below": 0.7, "min_samples": 20,
        "notify": [
            {"webhook": webhook.url}, {"slack": slack.url},
            {"pagerduty": {"routing_key_env": "PD_KEY_FOR_TEST", "url": pagerduty.url}},
        ],
    }  # fmt: skip
    service_config.alerts = [AlertConfig.model_validate(alert)]
    service_config.alerting = service_config.alerting.model_copy(
        update={"interval_s": 3600, "backoff_s": 0.01, "dashboard_url": "https://spanscore.internal:4319"}
    )
    service = Service(service_config)
    await service.start()
    try:
        store, evaluator = service.store, service.alerting
        # 10 low scores: fewer than min_samples, never fires however low
        store.insert_scores_sync(score_rows([0.1] * 10, 0))
        [state] = await evaluator.evaluate_all()
        assert state.status == "insufficient_data" and state.samples == 10
        # 30 scores around the threshold (mean 0.667, 95% interval about 0.52-0.81, straddling 0.7): no firing
        store.insert_scores_sync(score_rows([1.0, 0.9] * 10, 100))
        [state] = await evaluator.evaluate_all()
        assert state.samples == 30 and state.low < 0.7 < state.high and state.status == "ok"
        # many more low scores: the whole interval is below 0.7 -> exactly one firing, even evaluated twice
        store.insert_scores_sync(score_rows([0.2] * 40, 200))
        for _ in range(2):
            [state] = await evaluator.evaluate_all()
        assert state.status == "firing" and state.high < 0.7
        await evaluator.notifier.drain()
        assert [b["status"] for b in webhook.bodies] == ["firing"]
        event = webhook.bodies[0]
        assert {"alert", "status", "value", "threshold", "interval", "samples", "window", "started_at"} <= set(event)
        assert event["samples"] == 70 and event["threshold"] == 0.7 and event["interval"]["high"] < 0.7
        # The link opens the alert's view: its window, scorer and rule (#30 item 7), not the front page.
        link = "https://spanscore.internal:4319/dashboard/?since=15m&scorer=faithfulness&rule=support-quality"
        assert event["dashboard"] == link
        assert (
            slack.bodies[0]["text"].startswith("[FIRING] faithfulness-drop")
            and f"<{link}|dashboard>" in slack.bodies[0]["text"]
        )
        assert pagerduty.attempts == 3  # failed twice, delivered on the third attempt
        pd = pagerduty.bodies[0]
        assert pd["event_action"] == "trigger" and pd["routing_key"] == "routing-key-123"
        firing_id = event["transition_id"]
        assert len(firing_id) == 16 and event["id"] == f"{firing_id}:firing"
        assert slack.bodies[0]["text"].endswith(f"[id {firing_id}:firing]")
        # one PagerDuty incident per firing (#28): a later firing of the same alert opens a new one
        assert pd["dedup_key"] == f"spanscore/faithfulness-drop/{firing_id}" and pd["payload"]["severity"] == "error"
        assert pd["links"] == [{"href": link, "text": "spanscore dashboard"}]
        status = service.metrics()
        assert status['alert_firing{alert="faithfulness-drop"}'] == 1
        assert status['alert_notifications_sent{alert="faithfulness-drop",channel="pagerduty"}'] == 1

        # good scores follow: back above 0.7 -> one resolved, and only one
        store.insert_scores_sync(score_rows([1.0] * 300, 1000))
        for _ in range(2):
            [state] = await evaluator.evaluate_all()
        await evaluator.notifier.drain()
        assert state.status == "ok"
        assert [b["status"] for b in webhook.bodies] == ["firing", "resolved"]
        assert webhook.bodies[1]["resolved_at"] is not None
        assert pagerduty.bodies[1]["event_action"] == "resolve"
        assert pagerduty.bodies[1]["dedup_key"] == pd["dedup_key"]
        assert webhook.bodies[1]["transition_id"] == firing_id and webhook.bodies[1]["id"] == f"{firing_id}:resolved"
        [described] = service.operations.alerting_state()
        assert described["status"] == "ok" and described["notified"] == "resolved" and described["pending"] == ""

        # it fires again: a new firing, a new id, a new PagerDuty incident
        store.insert_scores_sync(score_rows([0.0] * 3000, 5000))
        [state] = await evaluator.evaluate_all()
        await evaluator.notifier.drain()
        assert state.status == "firing" and [b["status"] for b in webhook.bodies] == ["firing", "resolved", "firing"]
        assert webhook.bodies[2]["transition_id"] != firing_id
        assert pagerduty.bodies[2]["dedup_key"] == f"spanscore/faithfulness-drop/{webhook.bodies[2]['transition_id']}"
    finally:
        await service.shutdown()


def test_alert_config_problems_are_named() -> None:
    with pytest.raises(ValueError, match="exactly one of below"):
        AlertConfig.model_validate({"name": "a", "scorer": "s", "below": 0.5, "above": 0.9})
    with pytest.raises(ValueError, match="unknown key"):
        AlertConfig.model_validate({"name": "a", "scorer": "s", "below": 0.5, "where": {"colour": "red"}})
    with pytest.raises(ValueError, match="duration"):
        AlertConfig.model_validate({"name": "a", "scorer": "s", "below": 0.5, "window": "soon"})


class _Redirecting:
    """An endpoint that answers every POST with a 307 to ``target`` (which would receive the body if followed)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.attempts = 0
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        async def handle(request: web.Request) -> web.Response:
            self.attempts += 1
            raise web.HTTPTemporaryRedirect(self.target)

        app = web.Application()
        app.router.add_post("/{path:.*}", handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/hook"  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.mark.reliability("token-opens-api-not-host")
async def test_a_redirecting_webhook_does_not_carry_the_notification_elsewhere(
    receivers: list[Receiver], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 307 from the configured address is not followed: the body and a PagerDuty routing key stay put."""
    from spanscore.alerting.config import AlertingConfig
    from spanscore.alerting.notify import Notifier

    elsewhere = receivers[0]
    redirecting = _Redirecting(elsewhere.url)
    await redirecting.start()
    monkeypatch.setenv("PD_KEY_FOR_TEST", "routing-key-123")
    try:
        alert = AlertConfig.model_validate(
            {
                "name": "drop", "scorer": "faithfulness", "aggregate": "mean", "window": "15m", "below": 0.7,
                "notify": [
                    {"webhook": redirecting.url},
                    {"pagerduty": {"routing_key_env": "PD_KEY_FOR_TEST", "url": redirecting.url}},
                ],
            }
        )  # fmt: skip
        notifier = Notifier(AlertingConfig(max_attempts=3, backoff_s=0.01))
        event = {
            "alert": "drop", "status": "firing", "value": 0.1, "threshold": 0.7, "samples": 30, "window": "15m",
            "aggregate": "mean", "scorer": "faithfulness", "direction": "below", "confidence": 0.95,
            "interval": {"low": 0.05, "high": 0.2}, "started_at": "2026-11-25T00:00:00Z", "resolved_at": None,
        }  # fmt: skip
        notifier.notify(alert, event)
        await notifier.drain()
        assert elsewhere.bodies == [] and elsewhere.attempts == 0
        assert redirecting.attempts == 2  # one try per channel: a redirect is not retried either
        assert notifier.failed["drop", "webhook"] == 1 and notifier.failed["drop", "pagerduty"] == 1
    finally:
        await redirecting.stop()
