"""The one stage that pulls: readiness is a matter of time (a quiet period passing), not of a batch arriving.

Every ``poll_interval_s`` the poller asks the run assembler what is ready now and puts it in a bounded line of
ready runs; a second task hands the line to the dispatcher in chunks. The assembler's check runs on its own
thread (``runs.assembly_thread``), after every stored batch handed over before it.

The two are apart because a dispatch waits while the scoring queue is full: when a poll waited for its whole
dispatch, the next check came only after it, and under load one poll took 7,000-10,000 runs, the scorers
sat idle while the next check built them, and a run ready just after a check waited for the whole batch
(run end to score 12-18 s with the default rule at 12,000 spans/s, #43). Now the checks go on while scoring
works: past ``max_waiting`` ready runs or ``max_waiting_bytes`` of what they keep alive, the poller waits for
room, so the backpressure still reaches the assembler, whose bounds then hold what is not yet ready. The next
poll takes everything ready then (an independent check saw the line at 12,000-25,000 runs after such a wait,
where the bound is 2,000): the line is bounded by its own bound plus what run assembly's bounds let it hold.
Runs its bounds evict meanwhile wait in the assembler for that poll, up to the line's own bounds again: past them,
while the line stays full, the oldest are shed (``_shed``, after every chunk handed on and every interval): drawn
and decided at once, not scored, so a scoring overload that lasts costs coverage, counted, and not memory.

Sessions are asked for once the runs of the polls before have been handed to the dispatcher, which makes
each run a turn of its session: a session is never found ready without a turn already polled. A failed
dispatch is logged and the line goes on; a run whose decisions were not written is found again by recovery
after a restart. A stop hands on the runs in line, within the time it is given (``stop``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence

from spanscore.pipeline import Background, Consumer, every, first_set
from spanscore.runs.assembly_thread import AssemblyThread
from spanscore.runs.readiness import ReadyRun
from spanscore.runs.selection import RunSelector, completed_if_selected
from spanscore.runs.sessions import ReadySession, SessionTracker

log = logging.getLogger(__name__)

_SESSIONS = None
"""In the line after a poll's runs: sessions are asked for once those runs are handed on."""
_Polled = tuple[ReadyRun, "RunSelector | None"]
"""A polled run, with the rules' selector it was built under."""
SHED_LOG_INTERVAL_S = 30.0
"""At most one warning line this often about runs shed while scoring is behind (each line counts them)."""
MAX_WAITING_BYTES = 128 << 20
"""Estimated bytes the runs in line keep alive (``ReadyRun.held_bytes``: their traces' spans, which a filter
view holds whole to be built in full later) past which the poller waits. The run bound alone would let 2,000
filter views of traces of a few hundred KB each pin gigabytes after run assembly let their traces go."""


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
        """Ready runs polled and not yet handed to the dispatcher (a gauge): ``max_waiting``, plus one poll."""
        self.waiting_bytes = 0
        """What they keep alive, estimated (a gauge): at most ``max_waiting_bytes`` plus a poll."""
        self._room = asyncio.Event()
        self._arrived = asyncio.Event()
        self._background = Background("ready-poller")
        self._draining = asyncio.Event()
        self._dispatch_task: asyncio.Task[None] | None = None
        self._handing: list[ReadyRun] = []
        """The chunk the dispatcher is deciding now."""
        self._shedding: list[ReadyRun] = []
        """Shed runs being decided now (a stop out of time names them in ``left``)."""
        self._shed_logged = float("-inf")
        self._shed_at_last_line = 0
        self.left: list[str] = []
        """Trace ids of runs polled and not handed on when the last stop's time ran out (undecided: see ``stop``)."""

    @property
    def shed(self) -> int:
        """Runs decided without scoring because scoring was behind (``RunAssembler.shed_evicted``), since start."""
        return self._assembly.assembler.stats.runs_shed

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
        return [self._built_for_rules_now(item, selects) for item in ready]

    def _built_for_rules_now(self, item: ReadyRun, selects: RunSelector | None) -> ReadyRun:
        now = self._assembly.assembler.selects
        if now is selects or item.complete is None:
            return item
        try:  # the rules changed since it was built: they may select this filter view
            return completed_if_selected([item], now)[0]
        except Exception:  # one run's failure costs its full build, not the poll (or the line) it is in
            log.warning(
                "a run built as a filter view could not be built in full for the new rules; decided as it is "
                "trace_id=%s run_id=%s", item.run.trace_id, item.run.run_id, exc_info=True,
            )  # fmt: skip
            return item

    async def _poll_sessions(self) -> None:
        if self._scores_sessions():
            sessions = self._sessions.poll_ready(time.time_ns())
            if sessions:
                await self._sessions_to.consume(sessions)

    def start(self) -> None:
        self._draining.clear()
        self.left = []
        if self._dispatch_task is None:
            self._dispatch_task = asyncio.create_task(self._dispatch_loop(), name="ready-dispatch")
        self._background.start(self._loop)

    async def stop(self, within_s: float | None = None) -> None:
        """No more polls; the runs already polled, and those evicted since, are handed on for up to ``within_s``.

        ``within_s`` None waits until they are. A dispatch waits while the scoring queue is full, which with
        slow judges can take minutes: a stop that waited for the whole line would run past the service's
        ``shutdown_timeout_s``. What is still in line when the time runs out, and the chunk being decided then,
        is left undecided and named in ``left``: nothing of it was decided (or its sampled decisions have no
        score yet), so the next start's recovery decides it, and a fleet replica lists it in its handover note
        for its successors.
        """
        began, given = time.monotonic(), within_s
        cut: list[str] = []
        try:  # a poll, or shed runs being decided (they wait for storage, in a fleet for its gate)
            await asyncio.wait_for(self._background.stop(), within_s)
        except TimeoutError:
            cut = [ready.run.trace_id for ready in self._shedding]
            log.warning("stopping: the poller's last pass did not end within %.1fs; it was cut", within_s)
        within_s = None if within_s is None else max(0.0, within_s - (time.monotonic() - began))
        task, self._dispatch_task = self._dispatch_task, None
        if task is None:
            self._draining.set()
            self.left = cut
            return
        # Runs evicted since the last poll were handed on by no poll: they join the line, decided like the rest
        # within the time (or named in ``left``), where before a fleet replica's handover note left them out.
        began = time.monotonic()
        assembler = self._assembly.assembler
        try:
            evicted = await asyncio.wait_for(self._assembly.call(assembler.take_evicted), within_s)
        except TimeoutError:  # run assembly's thread is behind on intake: those runs are the next start's
            log.warning("stopping: run assembly did not answer within %.1fs; runs it evicted stay undecided", within_s)
            evicted = []
        if within_s is not None:
            within_s = max(0.0, within_s - (time.monotonic() - began))
        self._into_line(evicted, assembler.selects)
        self._draining.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), within_s)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            left = cut + [ready.run.trace_id for ready in self._handing]
            left += [polled[0].run.trace_id for polled in self._line if polled is not _SESSIONS]
            self.left = list(dict.fromkeys(left))
            self._handing, self.waiting, self.waiting_bytes = [], 0, 0
            self._line.clear()
            log.warning(
                "stopping: %d ready runs were not decided within %.1fs; the next start's recovery (or a fleet "
                "successor) decides them",
                len(left), given or 0,
            )  # fmt: skip
        else:
            self.left = cut

    async def _loop(self) -> None:
        # From the start of one poll to the next: under load a poll took 0.33 s at the median, and a run that became
        # ready just after one poll waited the pause plus that (#43).
        await every(self._interval, self._background.stopping, self._poll_into_line, _log_failure, from_start=True)

    async def _poll_into_line(self) -> None:
        stopping = self._background.stopping
        while (self.waiting >= self._max_waiting or self.waiting_bytes >= self._max_bytes) and not stopping.is_set():
            self._room.clear()
            await first_set(self._room, stopping, timeout_s=self._interval)
            # After each chunk handed on as well as each quiet interval: a line that moves, but slower than runs
            # arrive, stays full as surely as one that does not move.
            if not stopping.is_set():
                await self._shed()
        if stopping.is_set():
            return
        # Everything ready: a poll limited to the line's room left the backlog unsettled in run assembly, and run
        # end to score was 11-14 s at the median against 7-8 s (bench.scoring_latency, default rule, 12,000
        # spans/s). What one poll takes is bounded by what run assembly may hold.
        ready = await self._ready()
        self._into_line(ready, self._assembly.assembler.selects)
        if ready or not self._line:
            self._line.append(_SESSIONS)
        self._arrived.set()

    def _into_line(self, ready: list[ReadyRun], selects: RunSelector | None) -> None:
        """Runs built under ``selects`` join the line, counted by its gauges; the dispatch task is woken."""
        if ready:
            self._line.extend((item, selects) for item in ready)
            self.waiting += len(ready)
            self.waiting_bytes += sum(item.held_bytes for item in ready)
            self._arrived.set()

    async def _shed(self) -> None:
        """While the line is full: runs evicted past its bounds go to the dispatcher now, drawn but not scored.

        They skip the line, and take no place in the scoring queue (nothing of them is judged: a ``sampled`` draw
        is decided ``too_large``), so they are decided while the line waits. Bounded memory under a scoring
        overload that lasts, counted and said.
        """
        assembler = self._assembly.assembler
        shed = await self._assembly.call(assembler.shed_evicted, self._max_waiting, self._max_bytes)
        if not shed:
            return
        now, unlogged = time.monotonic(), self.shed - self._shed_at_last_line
        if unlogged and now - self._shed_logged >= SHED_LOG_INTERVAL_S:
            self._shed_logged, self._shed_at_last_line = now, self.shed
            log.warning(
                "scoring is behind: %d runs evicted from run assembly while the ready line was full were decided "
                "without scoring since the last line (a sampled draw is too_large; %d since start). Scoring does "
                "not keep up with arrival: add code-scorer workers or judge concurrency, narrow the rules, or "
                "raise scoring.queue_size",
                unlogged, self.shed,
            )  # fmt: skip
        self._shedding = shed
        await self._runs_to.consume(shed)
        self._shedding = []

    async def _dispatch_loop(self) -> None:
        while self._line or not self._draining.is_set():
            try:
                await self._dispatch_next()
            except Exception as exc:  # only a stop ends the line: a failed dispatch is logged and the next goes on
                _log_failure(exc)

    async def _dispatch_next(self) -> None:
        line = self._line
        if not line:
            self._arrived.clear()
            await first_set(self._arrived, self._draining)
            return
        if line[0] is _SESSIONS:
            line.popleft()
            await self._poll_sessions()
            return
        chunk: list[ReadyRun] = []
        while (polled := line[0] if line else _SESSIONS) is not _SESSIONS and len(chunk) < self._chunk:
            line.popleft()
            self.waiting -= 1
            self.waiting_bytes -= polled[0].held_bytes
            # Rules may change while a run waits in line: a filter view they now select is built in full.
            chunk.append(self._built_for_rules_now(*polled))
        self._room.set()
        self._handing = chunk
        try:
            await self._runs_to.consume(chunk)
        except Exception:
            self._handing = []
            raise
        self._handing = []  # kept when a stop cancels the dispatch: ``left`` names what it held


def _log_failure(exc: Exception) -> None:
    log.error("dispatching ready runs failed", exc_info=exc)
