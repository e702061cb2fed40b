"""One process keeps its alert states in ``<spool_dir>/alerts-state.json``, as before the state seam (#28)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from spanscore.alerting.config import AlertConfig, AlertingConfig
from spanscore.alerting.evaluator import AlertEvaluator
from spanscore.alerting.keeper_state import KeeperAlertState
from spanscore.alerting.notify import Notifier
from spanscore.alerting.state import AlertState, FileAlertState, transition_id
from spanscore.server.service import Service
from spanscore.storage.reads.alerts import window_scores
from tests.e2e.alert_parts import Receiver, score_rows

SETTINGS = AlertingConfig(backoff_s=0.01)


def evaluator(service: Service, url: str, state_file: Path, notifier: Notifier | None = None) -> AlertEvaluator:
    alert = AlertConfig.model_validate(
        {"name": "drop", "scorer": "faithfulness", "window": "15m", "below": 0.7, "notify": [{"webhook": url}]}
    )
    read = functools.partial(window_scores, service.store)
    return AlertEvaluator([alert], SETTINGS, read, notifier or Notifier(SETTINGS), state_file=state_file)


async def test_a_restart_neither_repeats_the_firing_nor_forgets_the_resolution(
    service: Service, receiver: Receiver, tmp_path: Path
) -> None:
    state_file = tmp_path / "spool" / "alerts-state.json"
    first = evaluator(service, receiver.url, state_file)
    service.store.insert_scores_sync(score_rows([0.2] * 40, 0))
    await first.evaluate_all()
    await first.notifier.drain()
    saved = json.loads(state_file.read_text(encoding="utf-8"))
    assert saved["drop"]["status"] == "firing" and saved["drop"]["notified"] == "firing"
    assert saved["drop"]["pending"] == ""  # delivered, so nothing is left to send

    second = evaluator(service, receiver.url, state_file)  # the restarted process
    await second.evaluate_all()
    service.store.insert_scores_sync(score_rows([1.0] * 300, 1000))
    for _ in range(2):
        await second.evaluate_all()
    await second.notifier.drain()
    assert [body["status"] for body in receiver.bodies] == ["firing", "resolved"]
    assert receiver.bodies[1]["transition_id"] == receiver.bodies[0]["transition_id"]


class _DiesBeforeSending(Notifier):
    def notify(self, *args: object, **kwargs: object) -> None:
        return None  # the process ended between the claim and the delivery


async def test_a_notification_claimed_before_a_crash_is_sent_after_the_restart(
    service: Service, receiver: Receiver, tmp_path: Path
) -> None:
    state_file = tmp_path / "alerts-state.json"
    crashed = evaluator(service, receiver.url, state_file, _DiesBeforeSending(SETTINGS))
    service.store.insert_scores_sync(score_rows([0.2] * 40, 0))
    await crashed.evaluate_all()
    assert receiver.bodies == [] and json.loads(state_file.read_text())["drop"]["pending"] == "firing"

    restarted = evaluator(service, receiver.url, state_file)
    for _ in range(3):
        await restarted.evaluate_all()
        await restarted.notifier.drain()
    assert [body["status"] for body in receiver.bodies] == ["firing"]
    assert json.loads(state_file.read_text())["drop"]["pending"] == ""


async def test_a_state_file_from_before_firing_ids_resolves_with_the_id_of_its_start(
    service: Service, receiver: Receiver, tmp_path: Path
) -> None:
    state_file = tmp_path / "alerts-state.json"
    started = 1_764_000_000.25
    old = {"alert": "drop", "status": "firing", "started_at": started, "notified": "firing", "samples": 40}
    state_file.write_text(json.dumps({"drop": old, "removed-alert": {"status": "ok"}}), encoding="utf-8")
    restarted = evaluator(service, receiver.url, state_file)
    assert restarted.states["drop"].status == "firing"
    service.store.insert_scores_sync(score_rows([1.0] * 50, 0))
    await restarted.evaluate_all()
    await restarted.notifier.drain()
    assert [body["status"] for body in receiver.bodies] == ["resolved"]
    assert receiver.bodies[0]["transition_id"] == transition_id("drop", started)


async def test_a_pending_mark_without_its_payload_does_not_stop_the_alert(
    service: Service, receiver: Receiver, tmp_path: Path
) -> None:
    state_file = tmp_path / "alerts-state.json"
    state_file.write_text(json.dumps({"drop": {"status": "ok", "pending": "firing"}}), encoding="utf-8")
    restarted = evaluator(service, receiver.url, state_file)
    service.store.insert_scores_sync(score_rows([0.2] * 40, 0))
    for _ in range(2):
        await restarted.evaluate_all()
        await restarted.notifier.drain()
    assert [body["status"] for body in receiver.bodies] == ["firing"]
    assert json.loads(state_file.read_text())["drop"]["pending"] == ""


def test_the_file_store_refuses_a_save_against_a_stale_version(tmp_path: Path) -> None:
    store = FileAlertState(tmp_path / "alerts-state.json")
    assert store.save(AlertState("drop", status="ok"), None) == 0
    assert store.save(AlertState("drop", status="firing"), None) is None  # someone created it first
    assert store.save(AlertState("drop", status="firing"), 0) == 1
    assert store.save(AlertState("drop", status="ok"), 0) is None  # stale: nothing written
    assert store.load()["drop"].state.status == "firing"
    assert FileAlertState(tmp_path / "alerts-state.json").load()["drop"].state.status == "firing"


def test_bad_state_settings_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="absolute znode path"):
        KeeperAlertState(object(), "spanscore/alerts")
    with pytest.raises(ValueError, match="not both"):
        AlertEvaluator([], SETTINGS, lambda *a: [], Notifier(SETTINGS), state=FileAlertState(None),
                       state_file=tmp_path / "x.json")  # fmt: skip
