"""``pipeline.every``: the pause between passes, or the time from one pass's start to the next (#43).

Observed: the ready poller paused its 0.2 s after each poll, and under load a poll (readiness, then the
dispatch) took 0.33 s at the median, so polls came 0.53 s apart and a run that became ready just after one
waited for all of that. The pauses are checked here as ``every`` asks for them, not as timings.
"""

from __future__ import annotations

import asyncio

import pytest

from spanscore import pipeline


async def _pauses(monkeypatch: pytest.MonkeyPatch, work_s: float, interval_s: float, from_start: bool) -> list[float]:
    stopping = asyncio.Event()
    asked: list[float] = []
    real_wait_for = asyncio.wait_for

    async def recording_wait_for(awaitable, timeout):  # type: ignore[no-untyped-def]  # noqa: ASYNC109
        asked.append(timeout)
        if len(asked) == 3:
            stopping.set()
        return await real_wait_for(awaitable, timeout)

    async def work() -> None:
        await asyncio.sleep(work_s)

    monkeypatch.setattr(pipeline.asyncio, "wait_for", recording_wait_for)
    await pipeline.every(interval_s, stopping, work, lambda exc: None, from_start=from_start)
    return asked


async def test_the_pause_follows_the_pass_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await _pauses(monkeypatch, 0.02, 0.1, from_start=False) == [0.1, 0.1, 0.1]


async def test_from_start_the_pass_counts_against_the_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses = await _pauses(monkeypatch, 0.05, 0.1, from_start=True)
    assert len(pauses) == 3 and all(0.0 <= pause <= 0.05 for pause in pauses)  # each pass took at least 0.05 s


async def test_from_start_a_pass_longer_than_the_interval_is_followed_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await _pauses(monkeypatch, 0.05, 0.01, from_start=True) == [0.0, 0.0, 0.0]


async def test_the_ready_poller_polls_from_start_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from spanscore.runs.assembly_thread import AssemblyThread
    from spanscore.runs.readiness import RunAssembler
    from spanscore.runs.sessions import SessionTracker
    from spanscore.scoring import ready_poller

    asked: dict[str, object] = {}

    async def recording_every(interval_s, stopping, work, on_error, **options):  # type: ignore[no-untyped-def]
        asked.update(options, interval_s=interval_s)

    monkeypatch.setattr(ready_poller, "every", recording_every)
    poller = ready_poller.ReadyPoller(
        AssemblyThread(RunAssembler()), SessionTracker(), [], [], interval_s=0.2, scores_sessions=lambda: False
    )  # type: ignore[arg-type]
    await poller._loop()
    assert asked == {"interval_s": 0.2, "from_start": True}
