"""The one stage that pulls: readiness is a matter of time (a quiet period passing), not of a batch arriving.

Every ``poll_interval_s`` the poller asks the run assembler what is ready now and puts it in a bounded line of
ready runs; a second task hands the line to the dispatcher in chunks. The assembler's check runs on its own
thread (``runs.assembly_thread``), after every stored batch handed over before it.

The two are apart because a dispatch waits while the scoring queue is full: when a poll waited for its whole
dispatch, the next check came only after it, and under load one poll took 7,000-10,000 runs, the scorers
sat idle while the next check built them, and a run ready just after a check waited for the whole batch
(run end to score 12-18 s with the default rule at 12,000 spans/s, #43). Now the checks go on while scoring
works, up to ``max_waiting`` ready runs or ``max_waiting_bytes`` of them; past that the poller waits for room,
so the backpressure still reaches the assembler (whose bounds then hold what is not yet ready) and memory stays
bounded.

Sessions are asked for once the runs of the polls before have been handed to the dispatcher, which makes
each run a turn of its session: a session is never found ready without a turn already polled. A failed
dispatch is logged and the line goes on; a run whose decisions were not written is found again by recovery
after a restart. A stop hands on every run in the line before it returns.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from spanscore.pipeline import Background, Consumer, every
from spanscore.runs.assembly_thread import AssemblyThread
from spanscore.runs.readiness import ReadyRun
from spanscore.runs.selection import RunSelector, completed_if_selected
from spanscore.runs.sessions import ReadySession, SessionTracker
from spanscore.runs.sizes import run_bytes

log = logging.getLogger(__name__)

_SESSIONS = None
"""In the line after a poll's runs: sessions are asked for once those runs are handed on."""
_Polled = tuple[ReadyRun, "RunSelector | None", int]
"""A polled run, with the rules' selector it was built under and its estimated bytes."""
MAX_WAITING_BYTES = 128 << 20
"""Estimated bytes of the runs in line (``runs.sizes``) past which the poller waits: about 2,000 runs of 64 KB of
text, where the run bound alone would let 2,000 runs of LLM-sized conversations hold several hundred MB."""


class ReadyPoller:
    def __init__(
        self,
        assembly: AssemblyThread,
        sessions: SessionTracker,
        runs_to: Consumer[Sequence[ReadyRun]],
        sessions_to: Consumer[Sequence[ReadySession]],
        *,
        interval_s: float,
        scores_sessions: Callable[[], bool],
        max_waiting: int = 2000,
        max_waiting_bytes: int = MAX_WAITING_BYTES,
        chunk: int = 500,
    ) -> None:
        self._assembly = assembly
        self._sessions = sessions
        self._runs_to = runs_to
        self._sessions_to = sessions_to
        self._interval = interval_s
        self._scores_sessions = scores_sessions
        self._max_waiting = max(1, max_waiting)
        self._max_bytes = max(1, max_waiting_bytes)
        self._chunk = max(1, chunk)
        self._line: deque[_Polled | None] = deque()
        """Polled runs, each with the rules' selector it was built under, and ``_SESSIONS`` after each poll."""
        self.waiting = 0
        """Ready runs polled and not yet handed to the dispatcher (a gauge; at most ``max_waiting`` plus a poll)."""
        self.waiting_bytes = 0
        """Their estimated bytes (a gauge; at most ``max_waiting_bytes`` plus a poll)."""
        self._room = asyncio.Event()
        self._arrived = asyncio.Event()
        self._background = Background("ready-poller")
        self._dispatching = Background("ready-dispatch")

    async def poll_once(self) -> int:
        """Hand on everything ready now, and wait for its dispatch; returns how many runs were ready."""
        ready = await self._ready()
        await self._runs_to.consume(ready)
        await self._poll_sessions()
        return len(ready)

    async def _ready(self) -> list[ReadyRun]:
        assembler = self._assembly.assembler
        selects = assembler.selects
        ready = await self._assembly.call(assembler.poll_ready, time.time_ns())
        return self._for_rules_now(ready, selects)

    def _for_rules_now(self, ready: list[ReadyRun], selects: RunSelector | None) -> list[ReadyRun]:
        """``ready``, built under ``selects``, with each run the rules now in force may select built in full."""
        now = self._assembly.assembler.selects
        return ready if now is selects else completed_if_selected(ready, now)  # rules changed: views may be selected

    async def _poll_sessions(self) -> None:
        if self._scores_sessions():
            sessions = self._sessions.poll_ready(time.time_ns())
            if sessions:
                await self._sessions_to.consume(sessions)

    def start(self) -> None:
        self._dispatching.start(self._dispatch_loop)
        self._background.start(self._loop)

    async def stop(self) -> None:
        """No more polls; every run already polled is handed on first."""
        await self._background.stop()
        await self._dispatching.stop()

    async def _loop(self) -> None:
        # From the start of one poll to the next: under load a poll took 0.33 s at the median, and a run that became
        # ready just after one poll waited the pause plus that (#43).
        await every(self._interval, self._background.stopping, self._poll_into_line, _log_failure, from_start=True)

    async def _poll_into_line(self) -> None:
        stopping = self._background.stopping
        while (self.waiting >= self._max_waiting or self.waiting_bytes >= self._max_bytes) and not stopping.is_set():
            self._room.clear()
            await _first(self._room, stopping)
        if stopping.is_set():
            return
        ready = await self._ready()
        selects = self._assembly.assembler.selects
        for item in ready:
            size = run_bytes(item.run) + sum(map(run_bytes, item.views))
            self._line.append((item, selects, size))
            self.waiting_bytes += size
        self.waiting += len(ready)
        if ready or not self._line:
            self._line.append(_SESSIONS)
        self._arrived.set()

    async def _dispatch_loop(self) -> None:
        line, stopping = self._line, self._dispatching.stopping
        while line or not stopping.is_set():
            if not line:
                self._arrived.clear()
                await _first(self._arrived, stopping)
                continue
            if line[0] is _SESSIONS:
                line.popleft()
                await _logged(self._poll_sessions())
                continue
            chunk: list[ReadyRun] = []
            while (polled := line[0] if line else _SESSIONS) is not _SESSIONS and len(chunk) < self._chunk:
                line.popleft()
                # Rules may change while a run waits in line: a filter view they now select is built in full.
                chunk.extend(self._for_rules_now([polled[0]], polled[1]))
                self.waiting_bytes -= polled[2]
            self.waiting -= len(chunk)
            self._room.set()
            await _logged(self._runs_to.consume(chunk))


async def _first(event: asyncio.Event, stopping: asyncio.Event) -> None:
    """Wait until ``event`` or ``stopping`` is set."""
    waits = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(stopping.wait())]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


async def _logged(work: Awaitable[object]) -> None:
    """Await ``work``; a failure is logged and the line goes on."""
    try:
        await work
    except Exception as exc:
        _log_failure(exc)


def _log_failure(exc: Exception) -> None:
    log.error("dispatching ready runs failed", exc_info=exc)
