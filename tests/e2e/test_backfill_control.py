"""Backfill progress and cancellation: in process, and Ctrl-C on the CLI against a real service."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.backfill_speed import _span
from spanscore.config import ServiceConfig
from spanscore.offline import backfill as backfill_module
from spanscore.offline.backfill import BackfillProgress, backfill
from spanscore.sampling.rules import RuleConfig
from spanscore.server.service import Service

RUNS = 30_000
RULE = RuleConfig.model_validate({"name": "offline", "sample": 1.0, "scorers": ["completeness"]})


async def _scores(service: Service) -> tuple[int, int]:
    rows = await asyncio.to_thread(
        service.store.internal_query, "SELECT count(), uniqExact(RunId) FROM scores WHERE Rule = 'offline'"
    )
    return int(rows[0][0]), int(rows[0][1])


async def test_progress_cancel_and_resume(service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backfill_module, "_CHUNK", 5)
    await asyncio.to_thread(service.store.insert_spans_sync, [_span(i) for i in range(30)])
    runs = service.config.collector.runs
    progress = BackfillProgress("offline")
    seen: list[tuple[int, int]] = []

    async def cancel_after_first_chunk() -> None:
        for _ in range(2000):
            seen.append((progress.done, progress.total))
            if progress.done >= 5:
                progress.cancel()
                return
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(cancel_after_first_chunk())
    first = await backfill(service.store, RULE, 3600, runs, progress=progress)
    await watcher
    assert first["cancelled"] is True and progress.finished
    assert all(done <= total for done, total in seen)
    assert 0 < first["scores_written"] < 30 and progress.done < progress.total == 30

    second = await backfill(service.store, RULE, 3600, runs)
    assert second["cancelled"] is False and second["skipped_already_scored"] == first["scores_written"]
    assert second["progress"]["done"] == second["progress"]["total"] == 30
    assert await _scores(service) == (30, 30)  # resumed without scoring a run twice


def _write_config(tmp_path: Path, api_port: int, grpc_port: int, http_port: int) -> Path:
    path = tmp_path / "spanscore.yaml"
    path.write_text(
        f"storage:\n  dsn: chdb://{tmp_path / 'store'}\n  database: backfill_cli\n"
        f"collector:\n  grpc:\n    port: {grpc_port}\n  http:\n    port: {http_port}\n"
        f"api:\n  port: {api_port}\n"
        "scoring:\n  recover_on_start: false\n"  # the seeded runs are left for the backfill, not scored at start
        "rules:\n  - name: offline\n    sample: 1.0\n    scorers: [completeness]\n"
    )
    return path


def test_ctrl_c_on_cli_cancels_on_the_service(tmp_path: Path) -> None:
    from spanscore.storage.clickhouse import ClickHouseStore
    from tests.e2e.test_process import _free_port, _start

    api_port = _free_port()
    config = _write_config(tmp_path, api_port, _free_port(), _free_port())
    store = ClickHouseStore(f"chdb://{tmp_path / 'store'}", "backfill_cli")
    store.open()
    # 30,000 runs: with 6,000 the backfill once finished at load 9-13 before the CLI's cancel reached it
    store.insert_spans_sync([_span(i) for i in range(RUNS)])
    store.close()
    service = _start(config)
    try:
        client = subprocess.Popen(
            [sys.executable, "-m", "spanscore.cli.commands", "backfill", "offline", "--since", "1h", "-c", str(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # a user's Ctrl-C: a suite started in the background (`scripts/test &`) hands its children SIGINT
            # ignored, and an ignored Ctrl-C let the backfill run to its end (exit 0) in those CI runs
            preexec_fn=_default_sigint,
        )
        status = _wait_status(api_port, lambda s: s.get("backfill_done", 0) > 0)
        client.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:  # 30 s was once not enough in a loaded CI run; the cause is not known, so the wait says how long
            _, stderr = client.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            client.kill()
            _, stderr = client.communicate()
            raise AssertionError(f"the CLI did not exit within 120 s of Ctrl-C; its stderr: {stderr[-2000:]}") from None
        assert client.returncode == 130, f"{time.monotonic() - sent:.1f} s after Ctrl-C: {stderr}"
        status = _wait_status(api_port, lambda s: s.get("backfill_finished") == 1.0)
        assert status["backfill_cancelled"] == 1.0
        assert status["backfill_done"] < status["backfill_total"] == RUNS
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=60)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_status(port: int, ready: Callable[[dict[str, float]], bool]) -> dict[str, float]:
    status: dict[str, float] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status", timeout=10) as response:
            status = json.loads(response.read())
        if ready(status):
            return status
        time.sleep(0.02)
    raise AssertionError(f"status never reached the expected state: {status}")


async def test_one_backfill_per_rule_and_every_cancel_names_what_it_stopped(
    service_config: ServiceConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #37 item 10: a second backfill made the first unstoppable (the cancel reached only the latest one),
    and both scored the same runs: with a judge, every call twice."""

    monkeypatch.setattr(backfill_module, "_CHUNK", 5)
    service = Service(service_config.model_copy(update={"rules": [RULE]}))
    await service.start()
    try:
        await _conflict_then_cancel(service)
    finally:
        await service.shutdown()


async def _conflict_then_cancel(service: Service) -> None:
    from spanscore.errors import ConflictError

    await asyncio.to_thread(service.store.insert_spans_sync, [_span(i) for i in range(30)])
    rule = RULE.name
    operations = service.operations
    first = asyncio.create_task(operations.backfill(rule, "1h"))
    await asyncio.sleep(0)  # the first one has registered itself before its first wait
    with pytest.raises(ConflictError, match=f"a backfill of rule '{rule}' is already running"):
        await operations.backfill(rule, "1h")
    assert (await operations.cancel_backfill("no-such-rule"))["cancelled"] is False
    answer = await operations.cancel_backfill()
    assert answer["cancelled"] is True and answer["rules"] == [rule]
    result = await first
    assert result["cancelled"] is True
    assert (await operations.cancel_backfill())["cancelled"] is False  # nothing left running
