"""When a conversation is ready to score: the session tracker behind ``target: session`` rules.

A session is every run that carries the same session id (whatever dialect
said it: ``session.id``, ``gen_ai.conversation.id``, OpenInference, traceloop
association properties, AI SDK metadata, Mastra thread ids; see
``runs.fields``). Runs are added as they become ready; ``poll_ready`` returns a
session once

- ``session_quiet``: none of its runs arrived for ``quiet_period_s``;
- ``session_max_duration``: ``max_duration_s`` passed since its first run (or
  since it was last scored) while it keeps going;
- ``session_evicted``: more than ``max_sessions`` sessions are held and this
  open one is the oldest (scored early rather than dropped).

A run that arrives for a session already scored reopens it under
``rescore="continued"`` and the whole session is scored again (reason
``session_continued``) once it is quiet; its scores replace the earlier ones
(score ids are derived from the session id). A scored session's turns stay in
memory for ``keep_scored_s``; a continuation after that, or after a restart,
is marked ``needs_history`` so the caller reads its earlier turns back from
storage before scoring.

Memory is bounded by ``max_sessions`` and ``max_turns`` per session, and in
estimated bytes (``runs.sizes``) by ``max_session_bytes`` per session (oldest
turns dropped) and ``max_held_bytes`` over all (as over ``max_sessions``). Pure logic
with an injected clock; no I/O.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from spanscore.run import Message, Run, Turn
from spanscore.runs.config import SessionsConfig
from spanscore.runs.sizes import turn_bytes

SessionReason = Literal["session_quiet", "session_max_duration", "session_evicted", "session_continued"]
_NS = 1_000_000_000
_FULL_SCAN_NS = _NS


@dataclass(slots=True)
class _Session:
    last_arrival_ns: int
    window_start_ns: int
    """When the current max-duration window began: the first arrival, then each scoring."""
    last: Run
    """The latest run, whose root span a session score attaches to."""
    turns: dict[str, Turn] = field(default_factory=dict)
    scored_at_ns: int | None = None
    """Set while the session is scored and unchanged since; None while it is open."""
    times_scored: int = 0
    needs_history: bool = False
    """Turns before the ones held may be in storage (memory was forgotten, or the process restarted)."""
    size: int = 0
    """Estimated bytes of its turns (``runs.sizes``)."""


@dataclass(frozen=True, slots=True)
class ReadySession:
    """A session to hand to sampling: its view as a ``Run`` (``target="session"``) and why it is ready now."""

    run: Run
    reason: SessionReason
    needs_history: bool
    """Earlier turns may be in storage only: read them (``with_history``) before scoring."""


@dataclass(slots=True)
class SessionStats:
    open_sessions: int = 0
    kept_sessions: int = 0
    """Scored sessions kept in memory (``keep_scored_s``) in case they continue."""
    held_turns: int = 0
    held_bytes: int = 0
    """Estimated bytes of every turn held (``max_held_bytes``)."""
    sessions_ready: int = 0
    sessions_rescored: int = 0
    sessions_evicted: int = 0
    turns_dropped: int = 0
    continued_ignored: int = 0


class SessionTracker:
    """Groups ready runs by session id and says when each session is ready (see the module docstring)."""

    def __init__(self, config: SessionsConfig | None = None) -> None:
        self.config = config or SessionsConfig()
        self.stats = SessionStats()
        self._open: OrderedDict[str, _Session] = OrderedDict()
        """Open sessions, in order of their last arrival (oldest first)."""
        self._scored: OrderedDict[str, _Session] = OrderedDict()
        """Scored sessions kept for a continuation, in order of their scoring (oldest first)."""
        self._evicted: list[ReadySession] = []
        self._last_full_scan_ns = -_FULL_SCAN_NS

    def add(self, run: Run, now_ns: int, *, needs_history: bool = False) -> bool:
        """Add one ready run as a turn of its session; False when it has no session id or is ignored."""
        session_id = run.session_id
        if not session_id or run.target != "run":
            return False
        session = self._open.get(session_id)
        if session is None:
            session = self._scored.get(session_id)
            if session is not None:
                if self.config.rescore == "never":
                    self.stats.continued_ignored += 1
                    return False
                del self._scored[session_id]
                session.scored_at_ns = None
                session.window_start_ns = now_ns
            else:
                session = _Session(now_ns, now_ns, run, needs_history=needs_history)
            self._open[session_id] = session
        session.last_arrival_ns = now_ns
        self._open.move_to_end(session_id)
        if run.start_time_ns >= session.last.start_time_ns:
            session.last = run
        before = len(session.turns)
        replaced = session.turns.get(run.run_id)
        turn = session.turns[run.run_id] = Turn.of(run)
        self._grow(session, turn_bytes(turn) - (turn_bytes(replaced) if replaced else 0))
        self.stats.held_turns += len(session.turns) - before
        self._trim(session)
        self._enforce_bounds()
        return True

    def _grow(self, session: _Session, size: int) -> None:
        session.size += size
        self.stats.held_bytes += size

    def _forget(self, session: _Session) -> None:
        self.stats.held_turns -= len(session.turns)
        self.stats.held_bytes -= session.size

    def _trim(self, session: _Session) -> None:
        if len(session.turns) <= self.config.max_turns and session.size <= self.config.max_session_bytes:
            return
        kept = {turn.run_id for turn in within_caps(session.turns.values(), self.config)}
        dropped = [turn for run_id, turn in session.turns.items() if run_id not in kept]
        for turn in dropped:
            del session.turns[turn.run_id]
            self._grow(session, -turn_bytes(turn))
        self.stats.turns_dropped += len(dropped)
        self.stats.held_turns -= len(dropped)

    def _enforce_bounds(self) -> None:
        while len(self._open) + len(self._scored) > self.config.max_sessions or (
            self.stats.held_bytes > self.config.max_held_bytes and len(self._open) + len(self._scored) > 1
        ):
            if self._scored:
                _, forgotten = self._scored.popitem(last=False)
                self._forget(forgotten)
                continue
            session_id, session = self._open.popitem(last=False)
            self._evicted.append(self._ready(session_id, session, "session_evicted"))
            self._forget(session)
            self.stats.sessions_evicted += 1
        self._count()

    def _count(self) -> None:
        self.stats.open_sessions = len(self._open)
        self.stats.kept_sessions = len(self._scored)

    def poll_ready(self, now_ns: int) -> list[ReadySession]:
        """Sessions ready by ``now_ns``, each once per quiet spell (again after it continues).

        Open sessions are kept in order of their last arrival, so a poll looks only at the front (the ones
        quiet long enough) and stops at the first recent one; once a second it looks at every open session for
        the max-duration rule. Scored sessions are kept in order of scoring and forgotten from the front once
        past ``keep_scored_s``. So a poll costs what is ready, not what is held (10,000 sessions held).
        """
        config = self.config
        quiet_ns, max_ns, keep_ns = (int(v * _NS) for v in (config.quiet_period_s, config.max_duration_s,
                                                            config.keep_scored_s))  # fmt: skip
        while self._scored:
            session_id, session = next(iter(self._scored.items()))
            if now_ns - (session.scored_at_ns or 0) < keep_ns:
                break
            del self._scored[session_id]
            self._forget(session)
        full = now_ns - self._last_full_scan_ns >= _FULL_SCAN_NS or now_ns < self._last_full_scan_ns
        candidates: list[tuple[str, SessionReason]] = []
        for session_id, session in self._open.items():
            if now_ns - session.last_arrival_ns >= quiet_ns:
                candidates.append((session_id, "session_continued" if session.times_scored else "session_quiet"))
            elif not full:
                break
            elif now_ns - session.window_start_ns >= max_ns:
                candidates.append((session_id, "session_max_duration"))
        if full:
            self._last_full_scan_ns = now_ns
        ready, self._evicted = self._evicted, []
        for session_id, reason in candidates:
            session = self._open.pop(session_id)
            ready.append(self._ready(session_id, session, reason))
            session.scored_at_ns = now_ns
            session.window_start_ns = now_ns
            session.times_scored += 1
            session.needs_history = False
            self._scored[session_id] = session
        self._count()
        self.stats.sessions_ready += sum(1 for item in ready if item.reason != "session_continued")
        self.stats.sessions_rescored += sum(1 for item in ready if item.reason == "session_continued")
        return ready

    def _ready(self, session_id: str, session: _Session, reason: SessionReason) -> ReadySession:
        view = session_view(session_id, session.turns.values(), session.last)
        return ReadySession(view, reason, session.needs_history)

    def knows(self, session_id: str, run_id: str) -> bool:
        """Whether this run is already a turn of a session held (open or kept after scoring)."""
        session = self._open.get(session_id) or self._scored.get(session_id)
        return session is not None and run_id in session.turns

    def continued(self, ready: ReadySession) -> ReadySession:
        """A session handed on as new that storage shows held turns before (a restart, past ``keep_scored_s``).

        It is a continuation as much as one memory kept: ``session_continued``, counted as a rescore. A session
        ready for another reason (its max duration, an eviction) keeps that reason and is counted as it was.
        """
        if ready.reason != "session_quiet":
            return ready
        self.stats.sessions_ready -= 1
        self.stats.sessions_rescored += 1
        return replace(ready, reason="session_continued")

    def absorb(self, session_id: str, turns: Iterable[Turn]) -> None:
        """Hold turns read back from storage for a session being scored, without counting them as arrivals.

        In a fleet they then count as known, so the same turn seen again later does not reopen the session.
        """
        session = self._open.get(session_id) or self._scored.get(session_id)
        if session is None:
            return
        before = len(session.turns)
        for turn in turns:
            if turn.run_id not in session.turns:
                session.turns[turn.run_id] = turn
                self._grow(session, turn_bytes(turn))
        self.stats.held_turns += len(session.turns) - before
        self._trim(session)

    def holds(self, session_id: str) -> bool:
        return session_id in self._open or session_id in self._scored

    def release(self, keep: Callable[[str], bool]) -> int:
        """Forget every session ``keep`` refuses (a fleet replica that no longer owns them); how many."""
        released = 0
        for held in (self._open, self._scored):
            for session_id in [sid for sid in held if not keep(sid)]:
                self._forget(held.pop(session_id))
                released += 1
        self._count()
        return released

    def reopen(self, session_id: str, now_ns: int) -> bool:
        """A session handed out as ready but not scored after all: open again, ready after another quiet period.

        A fleet's fence may refuse a ready session for a moment (its lease lapsed while the session's stored
        turns were read); left marked scored, nobody would score it. False when it is not held as scored.
        """
        session = self._scored.pop(session_id, None)
        if session is None:
            return False
        session.scored_at_ns = None
        session.times_scored = max(0, session.times_scored - 1)
        session.last_arrival_ns = now_ns
        self._open[session_id] = session
        self._count()
        return True

    def restore(self, runs: Iterable[Run], now_ns: int) -> int:
        """After a restart: take the turns of sessions storage says are unscored; they count as arriving now."""
        count = 0
        for run in runs:
            count += self.add(run, now_ns, needs_history=True)
        return count


def session_view(session_id: str, turns: Iterable[Turn], last: Run) -> Run:
    """The session as the ``Run`` session scorers read.

    Its ``turns`` in order, the users' messages as input, the answers as output, every tool call in order;
    the ids and attributes of its latest run, where its scores attach.
    """
    ordered = sorted(turns, key=lambda t: (t.start_time_ns, t.run_id))
    calls = [replace(call, order=index) for index, call in enumerate(c for t in ordered for c in t.tool_calls)]
    users = [Message("user", t.user) for t in ordered if t.user]
    answers = [Message("assistant", t.answer) for t in ordered if t.answer]
    first = ordered[0] if ordered else None
    return Run(
        users or None,
        answers or None,
        tool_calls=calls,
        run_id=session_id,
        trace_id=last.trace_id,
        span_id=last.span_id,
        model=last.model,
        provider=last.provider,
        agent_name=last.agent_name,
        service_name=last.service_name,
        session_id=session_id,
        user_id=last.user_id,
        error=next((t.error for t in reversed(ordered) if t.error), None),
        start_time_ns=first.start_time_ns if first else last.start_time_ns,
        end_time_ns=max((t.end_time_ns for t in ordered), default=last.end_time_ns),
        attributes=last.attributes,
        resource_attributes=last.resource_attributes,
        sources={"turns": f"{len(ordered)} runs with session id {session_id!r}"},
        trace_state=last.trace_state,
        target="session",
        turns=ordered,
        version_attributes=last.version_attributes,
    )


def within_caps(turns: Iterable[Turn], config: SessionsConfig) -> list[Turn]:
    """The newest turns, in order, within ``max_turns`` and ``max_session_bytes`` (the latest is always kept).

    One rule for turns that arrived and for turns read back from storage, so history cannot carry a session
    past the caps that bound its memory and what its judge is sent.
    """
    ordered = sorted(turns, key=lambda t: (t.start_time_ns, t.run_id))
    size = sum(turn_bytes(turn) for turn in ordered)
    first = 0
    while first < len(ordered) - 1 and (len(ordered) - first > config.max_turns or size > config.max_session_bytes):
        size -= turn_bytes(ordered[first])
        first += 1
    return ordered[first:]


def with_history(ready: ReadySession, earlier: Iterable[Turn], config: SessionsConfig) -> ReadySession:
    """The ready session with turns read back from storage added (a held turn wins over a stored copy).

    The merged turns are cut to the session caps, oldest first, as turns that arrive are.
    """
    held = {turn.run_id: turn for turn in ready.run.turns or ()}
    merged = {turn.run_id: turn for turn in earlier}
    merged.update(held)
    # The view carries its latest run's ids and attributes, which is all ``session_view`` reads from ``last``.
    view = session_view(ready.run.run_id, within_caps(merged.values(), config), ready.run)
    return replace(ready, run=view, needs_history=False)
