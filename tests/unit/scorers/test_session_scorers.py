"""Session scorers on hand-built conversations: the formulas of docs/scorers.md, worked through."""

from __future__ import annotations

import pytest

from spanscore.run import Run, ToolCall, Turn
from spanscore.scorers import Status, build
from spanscore.scorers.code.session import call_key, repeated_calls
from spanscore.scorers.llm.conversation import (
    conversation_relevancy_score,
    frustration_score,
    goal_completion_score,
    knowledge_retention_score,
    transcript,
)


def session(*turns: Turn) -> Run:
    return Run(run_id="s-1", session_id="s-1", target="session", turns=turns)


def turn(index: int, *calls: ToolCall, user: str | None = "q", answer: str | None = "a") -> Turn:
    return Turn(f"r{index}", f"{index + 1:032x}", f"{index:016x}", user, answer, calls, start_time_ns=index)


SEARCH = ToolCall("search", {"q": "hours", "lang": "en"})
SEARCH_AGAIN = ToolCall("search", '{"lang": "en", "q": "hours"}')  # same call, other spelling
WEATHER = ToolCall("weather", {"city": "Paris"})


def test_turn_count_and_tool_calls_per_turn() -> None:
    conversation = session(turn(0, SEARCH), turn(1, SEARCH, WEATHER, SEARCH_AGAIN), turn(2, answer=None))
    count = build("turn_count").run(conversation)
    assert (count.score, count.reason) == (3.0, "3 turns, 1 without an answer.")
    per_turn = build("tool_calls_per_turn").run(conversation)
    assert per_turn.score == pytest.approx(4 / 3, abs=1e-4)
    assert per_turn.reason == "4 tool calls over 3 turns (per turn: 1, 3, 0); the busiest is turn 2."


def test_one_turn_and_one_call_read_in_the_singular() -> None:
    """#30 item 7: a reason on the dashboard reads "1 turn", not "1 turns"."""
    conversation = session(turn(0, SEARCH))
    assert build("turn_count").run(conversation).reason == "1 turn."
    assert build("tool_calls_per_turn").run(conversation).reason == (
        "1 tool call over 1 turn (per turn: 1); the busiest is turn 1."
    )


def test_repeated_tool_calls_within_a_turn_and_across_turns() -> None:
    conversation = session(turn(0, SEARCH), turn(1, SEARCH, WEATHER, SEARCH_AGAIN))
    assert call_key(SEARCH) == call_key(SEARCH_AGAIN)
    within = build("repeated_tool_calls").run(conversation)
    assert within.score == 0.25  # 1 of 4: the third call of turn 2 repeats its first
    assert "search again in turn 2" in (within.reason or "")
    across = build("repeated_tool_calls", across_turns=True).run(conversation)
    assert across.score == 0.5  # turn 2's first search also repeats turn 1's
    assert repeated_calls([[SEARCH], [WEATHER]]) == []


def test_session_scorers_need_turns() -> None:
    result = build("turn_count").run(Run("q", "a"))
    assert result.status is Status.MISSING_INPUT and result.missing_fields == ("turns",)


def test_llm_session_formulas() -> None:
    verdicts = [{"verdict": "yes"}, {"verdict": "unsure"}, {"verdict": "no"}, {"verdict": "yes"}]
    assert conversation_relevancy_score(verdicts) == 0.58  # (2 + 0.3) / 4 = 0.575 -> 0.58
    assert conversation_relevancy_score([]) == 1.0
    assert knowledge_retention_score([{"verdict": "kept"}, {"verdict": "forgot"}, {"verdict": "kept"}]) == 0.67
    goals = [{"outcome": "achieved"}, {"outcome": "partial"}, {"outcome": "not_achieved"}]
    assert goal_completion_score(goals) == 0.5
    assert frustration_score([{"verdict": "no"}, {"verdict": "yes"}, {"verdict": "no"}, {"verdict": "no"}]) == 0.25


def test_transcript_numbers_turns_and_shows_tool_calls() -> None:
    text = transcript(
        [turn(0, WEATHER, user="Weather in Paris?", answer="Sunny."), turn(1, user="Thanks", answer=None)]
    )
    assert "[turn 1]\nuser: Weather in Paris?\ntool call: weather(" in text
    assert "[turn 2]\nuser: Thanks\nagent: (no answer recorded)" in text
