"""Traces recorded from real agent frameworks give the true prompt and answer, and every filter key matches.

The fixtures (``tests/fixtures/traces/frameworks/NAME.traces.json``) come from
``tests/fixtures/record_frameworks.py`` (Python) or the JavaScript recorders;
``NAME.meta.json`` beside each says which framework and instrumentation made it
and, under ``expect``, where this test's expectations differ from what every
recorder's script does: ask about Paris, then (``turns: 2``) about Rome in the
same session, one ``get_weather`` tool call per turn.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from recorded_traces import FIXTURES, load

from spanscore.run import Run
from spanscore.runs.assembly import runs_from_spans
from spanscore.sampling.filters import parse_filter
from tests.fakes.fake_openai_chat import FINAL_ANSWER, MODEL

FRAMEWORKS = FIXTURES / "frameworks"
NAMES = sorted(path.name.removesuffix(".meta.json") for path in FRAMEWORKS.glob("*.meta.json"))
SYSTEM = "You are a weather assistant. Use the tools you have."
QUESTIONS = ("What is the weather in Paris?", "And in Rome?")
CITIES = ("Paris", "Rome")
TOOL_RESULT = json.dumps({"temp_c": 22, "sky": "sunny"})
DEFAULTS: dict[str, Any] = {
    "agent_name": "weather_agent",
    "session_id": "session-42",
    "user_id": "user-7",
    "system": SYSTEM,
    "model": MODEL,
    "provider": "openai",
}


def meta(name: str) -> dict[str, Any]:
    return json.loads((FRAMEWORKS / f"{name}.meta.json").read_text())  # type: ignore[no-any-return]


def scored_runs(name: str) -> list[Run]:
    """The runs that carry a prompt and an answer, in start order; the rest must be unscorable."""
    spans, logs = load(name, FRAMEWORKS)
    runs = runs_from_spans(spans, logs)
    scorable = [run for run in runs if not run.missing(["input", "output"])]
    assert all(run.output is None for run in runs if run not in scorable), "a run without a prompt has an answer"
    return sorted(scorable, key=lambda run: run.start_time_ns)


def expected_turns(name: str) -> list[dict[str, Any]]:
    info = meta(name)
    overrides = dict(info.get("expect") or {})
    input_texts = overrides.pop("input_texts", None) or list(QUESTIONS)
    # The tool's name as the framework reports it, when it always qualifies it (Semantic Kernel: PLUGIN-get_weather).
    tool_name = overrides.pop("tool_name", None) or "get_weather"
    # A framework that traces no tool execution (Haystack's Agent) leaves the call's result and id unknown: null.
    tool_result = overrides.pop("tool_result", TOOL_RESULT)
    with_id = overrides.pop("tool_call_id", "call_weather") is not None
    turns = []
    for index in range(int(info.get("turns", 1))):
        city = CITIES[index]
        answer = FINAL_ANSWER.replace("Paris", city)
        calls = [(tool_name, {"city": city}, tool_result, f"call_weather_{index + 1}" if with_id else None)]
        turns.append(
            {**DEFAULTS, **overrides, "input_text": input_texts[index], "output_text": answer, "tool_calls": calls}
        )
    return turns


def canonical(run: Run) -> dict[str, Any]:
    return {
        # Surrounding whitespace is the framework's (Strands ends its answer with a newline), not a misreading.
        "input_text": (run.input_text or "").strip(),
        "output_text": (run.output_text or "").strip(),
        "system": run.system,
        "tool_calls": [(c.name, c.arguments, c.result, c.id) for c in run.tool_calls or ()],
        "agent_name": run.agent_name,
        "session_id": run.session_id,
        "user_id": run.user_id,
        "model": run.model,
        "provider": run.provider,
    }


def test_fixtures_are_there() -> None:
    assert {"langgraph_openinference", "langchain_openllmetry", "openai_agents_openinference", "pydantic_ai"} <= set(
        NAMES
    )


@pytest.mark.parametrize("name", NAMES)
def test_each_turn_is_the_true_prompt_answer_and_tool_call(name: str) -> None:
    runs = scored_runs(name)
    expected = expected_turns(name)
    actual = [canonical(run) for run in runs]
    for turn, got in zip(expected, actual, strict=False):
        for key, value in turn.items():
            if value == "*":  # recorded by the framework itself (a generated id, its own prompt): any non-empty
                assert got[key], f"{name}: {key} is empty"
                turn[key] = got[key]
    assert actual == expected
    assert all(run.session_id for run in runs) and len({run.session_id for run in runs}) == 1
    assert all(run.context is None and run.error is None for run in runs)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("agent.name", "agent_name"),
        ("gen_ai.agent.name", "agent_name"),
        ("model", "model"),
        ("gen_ai.request.model", "model"),
        ("provider", "provider"),
        ("gen_ai.provider.name", "provider"),
        ("session.id", "session_id"),
        ("gen_ai.conversation.id", "session_id"),
        ("user.id", "user_id"),
    ],
)
def test_canonical_filter_keys_and_their_aliases_match_every_framework(name: str, key: str, field: str) -> None:
    turn = expected_turns(name)[0]
    value = turn[field]
    runs = scored_runs(name)
    if value is None:  # the framework does not report it: the key then matches nothing
        assert not any(parse_filter({key: {"exists": True}}).matches(run) for run in runs)
        return
    if value == "*":
        value = runs[0].session_id
    assert all(parse_filter({key: value}).matches(run) for run in runs)
    assert not any(parse_filter({key: "someone-else"}).matches(run) for run in runs)
