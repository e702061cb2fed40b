"""The one stage that pulls: readiness is a matter of time (a quiet period passing), not of a batch arriving.

Every ``poll_interval_s`` the poller asks the run assembler (and the session tracker, when a rule scores
sessions) what is ready now and hands it to the dispatcher. The assembler's check runs on its own thread
(``runs.assembly_thread``), after every stored batch handed over before it. A failed dispatch is logged and
the loop goes on; a run whose decisions were not written is found again by recovery after a restart.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from spanscore.pipeline import Background, Consumer, every
from spanscore.runs.assembly_thread import AssemblyThread
from spanscore.runs.readiness import ReadyRun
from spanscore.runs.selection import completed_if_selected
from spanscore.runs.sessions import ReadySession, SessionTracker

log = logging.getLogger(__name__)


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
    ) -> None:
        self._assembly = assembly
        self._sessions = sessions
        self._runs_to = runs_to
        self._sessions_to = sessions_to
        self._interval = interval_s
        self._scores_sessions = scores_sessions
        self._background = Background("ready-poller")

    async def poll_once(self) -> int:
        """Hand on everything ready now; returns how many runs were ready."""
        assembler = self._assembly.assembler
        selects = assembler.selects
        ready = await self._assembly.call(assembler.poll_ready, time.time_ns())
        if assembler.selects is not selects:  # the rules changed meanwhile: they may select a run built as a view
            ready = completed_if_selected(ready, assembler.selects)
        await self._runs_to.consume(ready)
        if self._scores_sessions():
            sessions = self._sessions.poll_ready(time.time_ns())
            if sessions:
                await self._sessions_to.consume(sessions)
        return len(ready)

    def start(self) -> None:
        self._background.start(self._loop)

    async def stop(self) -> None:
        await self._background.stop()

    async def _loop(self) -> None:
        # From the start of one poll to the next: under load a poll (readiness, then the dispatch) took 0.33 s at
        # the median, and a run that became ready just after one poll waited the pause plus that (#43).
        await every(self._interval, self._background.stopping, self.poll_once, _log_failure, from_start=True)


def _log_failure(exc: Exception) -> None:
    log.error("dispatching ready runs failed", exc_info=exc)
