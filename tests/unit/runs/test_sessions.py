"""The session tracker: ready after the quiet period or the max duration, rescored when it continues, bounded."""

from __future__ import annotations

from spanscore.run import Run, Turn
from spanscore.runs.config import SessionsConfig
from spanscore.runs.sessions import SessionTracker, with_history
from spanscore.runs.sizes import turn_bytes

S = 1_000_000_000
T0 = 1_767_225_600 * S


def turn_run(session: str, index: int, *, tools: tuple[str, ...] = ()) -> Run:
    return Run(
        f"question {index}",
        f"answer {index}",
        tool_calls=list(tools),
        run_id=f"{index:016x}",
        trace_id=f"{index + 1:032x}",
        span_id=f"{index:016x}",
        session_id=session,
        start_time_ns=T0 + index * S,
        end_time_ns=T0 + index * S + S // 2,
    )


def test_a_session_is_ready_once_after_its_quiet_period_with_its_turns_in_order() -> None:
    tracker = SessionTracker(SessionsConfig(quiet_period_s=10, max_duration_s=100))
    for arrival, index in enumerate((2, 0, 1)):  # runs may become ready out of order
        assert tracker.add(turn_run("s-1", index), T0 + arrival * S)
    assert not tracker.add(Run("q", "a", run_id="x"), T0)  # no session id: not a turn
    assert tracker.poll_ready(T0 + 11 * S) == []  # the last turn arrived at T0+2s
    (ready,) = tracker.poll_ready(T0 + 12 * S)
    view = ready.run
    assert (ready.reason, view.target, view.run_id, view.session_id) == ("session_quiet", "session", "s-1", "s-1")
    assert [turn.user for turn in view.turns or ()] == ["question 0", "question 1", "question 2"]
    # Scores attach to the root span of the latest run; the session starts with its first run.
    assert (view.trace_id, view.span_id) == (f"{3:032x}", f"{2:016x}")
    assert view.start_time_ns == T0
    assert tracker.poll_ready(T0 + 100 * S) == []


def test_a_session_that_continues_is_scored_again_whole() -> None:
    tracker = SessionTracker(SessionsConfig(quiet_period_s=10, max_duration_s=100))
    for index in range(3):
        tracker.add(turn_run("s-1", index), T0)
    assert len(tracker.poll_ready(T0 + 10 * S)) == 1
    tracker.add(turn_run("s-1", 3), T0 + 20 * S)
    (again,) = tracker.poll_ready(T0 + 30 * S)
    assert again.reason == "session_continued"
    assert len(again.run.turns or ()) == 4
    assert tracker.stats.sessions_rescored == 1


def test_rescore_never_ignores_a_continuation() -> None:
    tracker = SessionTracker(SessionsConfig(quiet_period_s=10, max_duration_s=100, rescore="never"))
    tracker.add(turn_run("s-1", 0), T0)
    assert len(tracker.poll_ready(T0 + 10 * S)) == 1
    assert not tracker.add(turn_run("s-1", 1), T0 + 20 * S)
    assert tracker.poll_ready(T0 + 40 * S) == []
    assert tracker.stats.continued_ignored == 1


def test_a_busy_session_is_scored_at_max_duration() -> None:
    tracker = SessionTracker(SessionsConfig(quiet_period_s=10, max_duration_s=30))
    for second in range(0, 35, 5):  # a turn every 5 s: never quiet for 10 s
        tracker.add(turn_run("s-1", second), T0 + second * S)
        ready = tracker.poll_ready(T0 + second * S)
        if second < 30:
            assert ready == []
    assert [item.reason for item in ready] == ["session_max_duration"]


def test_memory_is_bounded_open_sessions_are_scored_early_not_dropped() -> None:
    tracker = SessionTracker(SessionsConfig(quiet_period_s=10, max_duration_s=100, max_sessions=3, max_turns=2))
    for index in range(5):
        tracker.add(turn_run(f"s-{index}", index), T0 + index * S)
    for index in range(4):
        tracker.add(turn_run("s-4", 10 + index), T0 + 5 * S)
    assert tracker.stats.open_sessions == 3
    assert tracker.stats.turns_dropped == 3 and tracker.stats.held_turns == 2 + 2
    evicted = tracker.poll_ready(T0 + 6 * S)
    assert sorted((item.run.run_id, item.reason) for item in evicted) == [
        ("s-0", "session_evicted"),
        ("s-1", "session_evicted"),
    ]
    (busy,) = [item for item in tracker.poll_ready(T0 + 20 * S) if item.run.run_id == "s-4"]
    assert [turn.user for turn in busy.run.turns or ()] == ["question 12", "question 13"]  # the latest turns


def test_restored_sessions_read_their_history_before_scoring() -> None:
    tracker = SessionTracker(SessionsConfig(quiet_period_s=10, max_duration_s=100))
    assert tracker.restore([turn_run("s-1", 2)], T0) == 1
    (ready,) = tracker.poll_ready(T0 + 10 * S)
    assert ready.needs_history
    earlier = [Turn.of(turn_run("s-1", index)) for index in (0, 1, 2)]
    merged = with_history(ready, earlier, tracker.config)
    assert not merged.needs_history
    assert [turn.user for turn in merged.run.turns or ()] == ["question 0", "question 1", "question 2"]
    assert merged.run.start_time_ns == T0 and merged.run.span_id == f"{2:016x}"


def test_history_read_back_is_cut_to_the_session_caps_newest_first() -> None:
    """Turns read back from storage must not carry a session past ``max_turns`` or ``max_session_bytes``: those
    caps bound its memory and what the judge is sent, whether its turns arrived or were read back."""
    tracker = SessionTracker(SessionsConfig(quiet_period_s=10, max_duration_s=100, max_turns=3))
    tracker.add(turn_run("s-1", 8), T0, needs_history=True)
    (ready,) = tracker.poll_ready(T0 + 10 * S)
    earlier = [Turn.of(turn_run("s-1", index)) for index in range(8)]
    merged = with_history(ready, earlier, tracker.config)
    assert [turn.user for turn in merged.run.turns or ()] == ["question 6", "question 7", "question 8"]
    one_turn = turn_bytes(Turn.of(turn_run("s-1", 8)))
    by_bytes = SessionsConfig(quiet_period_s=10, max_duration_s=100, max_session_bytes=2 * one_turn + 1)
    merged = with_history(ready, earlier, by_bytes)
    assert [turn.user for turn in merged.run.turns or ()] == ["question 7", "question 8"]
    tiny = SessionsConfig(quiet_period_s=10, max_duration_s=100, max_session_bytes=1)
    assert [turn.user for turn in with_history(ready, earlier, tiny).run.turns or ()] == ["question 8"]
