"""JavaScript agent frameworks recorded at their current releases yield each turn's true prompt and answer.

The fixtures come from ``tests/fixtures/record_traces.py``: the Vercel AI SDK 7 (``@ai-sdk/otel``, and
its legacy integration), the AI SDK 6 (``experimental_telemetry``) and Mastra with thread memory, each
a two-turn weather conversation (one tool call per turn) against the loopback multi-turn fake, sent over
OTLP/HTTP. Every turn is one trace and one run; the whole canonical run is asserted, field by field.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from recorded_traces import FIXTURES, load
from test_runs_snapshots import snapshot

from spanscore.records import SpanRecord
from spanscore.run import Message, Run, ToolCall
from spanscore.runs.assembly import runs_from_spans
from spanscore.sampling.filters import parse_filter
from tests.fakes.fake_openai_turns import CITY_ANSWERS, TOOL_RESULTS

SYSTEM = "You are a weather assistant. Use the tools you have."
PARIS, ROME = "What is the weather in Paris?", "And in Rome?"
PARIS_CALL = ToolCall("get_weather", {"city": "Paris"}, TOOL_RESULTS["Paris"], "call_weather_1", 0)
ROME_CALL = ToolCall("get_weather", {"city": "Rome"}, TOOL_RESULTS["Rome"], "call_weather_2", 0)
FIRST_CALL_REQUEST = Message("assistant", "", (replace(PARIS_CALL, result=None),))
JS_RECORDED = ("vercel_ai7", "vercel_ai7_legacy", "vercel_ai6", "mastra_memory")
RECORDER_FOLDERS = {"vercel_ai6": "node-ai6", "mastra_memory": "node-mastra"}
"""Where each fixture's recorder lives (``npm ci`` there to re-record), node-ai7 when not listed."""
SECOND_TURN_INPUT = {
    # AI SDK 7 reports the history it was given; AI SDK 6 also the first turn's tool call and result.
    "vercel_ai7": (Message("user", PARIS), Message("assistant", CITY_ANSWERS["Paris"]), Message("user", ROME)),
    "vercel_ai7_legacy": (Message("user", PARIS), Message("assistant", CITY_ANSWERS["Paris"]), Message("user", ROME)),
    "vercel_ai6": (
        Message("user", PARIS),
        FIRST_CALL_REQUEST,
        Message("tool", TOOL_RESULTS["Paris"]),
        Message("assistant", CITY_ANSWERS["Paris"]),
        Message("user", ROME),
    ),
    # Mastra memory adds the thread's history to the model's prompt; the run's input is the turn's message.
    "mastra_memory": (Message("user", ROME),),
}


def turns(name: str) -> list[Run]:
    spans, logs = load(name)
    runs = runs_from_spans(spans, logs)
    assert len(runs) == 2, [run.span_id for run in runs]
    return runs


def scored(run: Run) -> dict[str, object]:
    """Everything a scorer or a sampling rule reads from a run."""
    return {
        "input": run.input,
        "input_text": run.input_text,
        "output_text": run.output_text,
        "system": run.system,
        "tool_calls": run.tool_calls,
        "context": run.context,
        "ground_truth": run.ground_truth,
        "agent_name": run.agent_name,
        "model": run.model,
        "provider": run.provider,
        "session_id": run.session_id,
        "user_id": run.user_id,
        "usage": (run.usage.input_tokens, run.usage.output_tokens),
        "error": run.error,
    }


def expected(name: str, turn: int) -> dict[str, object]:
    common = {
        "system": SYSTEM,
        "context": None,
        "ground_truth": None,
        "agent_name": "weather_agent",
        "model": "gpt-4o-mini",
        "provider": "openai",
        "session_id": "session-42",
        "user_id": "user-7",
        "usage": (40 + 60, 8 + 12),
        "error": None,
    }
    if turn == 0:
        first = (Message("user", PARIS),)
        return {
            **common, "input": first, "input_text": PARIS, "output_text": CITY_ANSWERS["Paris"],
            "tool_calls": (PARIS_CALL,),
        }  # fmt: skip
    # Whatever history the input carries, the turn's question is its last one: what a judge is asked about.
    return {
        **common, "input": SECOND_TURN_INPUT[name], "input_text": ROME, "output_text": CITY_ANSWERS["Rome"],
        "tool_calls": (ROME_CALL,),
    }  # fmt: skip


@pytest.mark.parametrize("name", JS_RECORDED)
def test_each_turn_is_the_prompt_sent_and_the_answer_returned(name: str) -> None:
    for turn, run in enumerate(turns(name)):
        assert scored(run) == expected(name, turn), (name, turn)


@pytest.mark.parametrize("name", JS_RECORDED)
def test_canonical_runs_snapshot(name: str) -> None:
    """Every field of both turns with its source; ``SPANSCORE_UPDATE_SNAPSHOTS=1`` rewrites the files."""
    produced = [snapshot(run) for run in turns(name)]
    path = FIXTURES / f"{name}.runs.json"
    if os.environ.get("SPANSCORE_UPDATE_SNAPSHOTS") == "1":
        path.write_text(json.dumps(produced, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert produced == json.loads(path.read_text())


@pytest.mark.parametrize("name", JS_RECORDED)
def test_the_answer_holds_no_tool_result(name: str) -> None:
    """AI SDK 7 puts text, tool_call and tool_call_response parts in one output message: only the text answers."""
    for run in turns(name):
        answer = run.output or ()
        assert all(not m.content or m.content in CITY_ANSWERS.values() for m in answer), answer
        assert not any(result in (m.content or "") for m in answer for result in TOOL_RESULTS.values())


@pytest.mark.parametrize(
    ("name", "field", "source"),
    [
        ("vercel_ai7", "output", "otel_genai:gen_ai.output.messages"),
        ("vercel_ai7", "agent_name", "otel_genai:gen_ai.agent.name"),
        ("vercel_ai7", "session_id", "vercel_ai:ai.settings.context.sessionId"),
        ("vercel_ai7", "user_id", "vercel_ai:ai.settings.context.userId"),
        ("vercel_ai7_legacy", "agent_name", "vercel_ai:ai.telemetry.functionId"),
        ("vercel_ai7_legacy", "session_id", "vercel_ai:ai.settings.context.sessionId"),
        ("vercel_ai6", "session_id", "vercel_ai:ai.telemetry.metadata.sessionId"),
        ("mastra_memory", "input", "mastra:mastra.agent_run.input"),
        ("mastra_memory", "session_id", "otel_genai:gen_ai.conversation.id"),
        ("mastra_memory", "user_id", "mastra:mastra.metadata.resourceId"),
    ],
)
def test_sources_name_the_attribute_read(name: str, field: str, source: str) -> None:
    for run in turns(name):
        assert run.sources[field] == source


@pytest.mark.parametrize("name", JS_RECORDED)
def test_a_rule_on_agent_model_provider_session_and_user_selects_every_turn(name: str) -> None:
    where = {
        "agent.name": "weather_agent",
        "model": "gpt-4o-mini",
        "provider": "openai",
        "session.id": "session-42",
        "user.id": "user-7",
    }
    rule = parse_filter(where)
    assert [rule.matches(run) for run in turns(name)] == [True, True]


def test_mastra_thread_id_is_the_session_without_the_genai_conversation_id() -> None:
    """The thread id also rides as Mastra metadata; an exporter that leaves out the GenAI attribute still has it."""
    spans, _ = load("mastra_memory")
    bare = [
        replace(span, attributes={k: v for k, v in span.attributes.items() if k != "gen_ai.conversation.id"})
        for span in spans
    ]
    for run in runs_from_spans(bare):
        assert (run.session_id, run.sources["session_id"]) == ("session-42", "mastra:mastra.metadata.threadId")


def wrapped(spans: list[SpanRecord], name: str) -> list[SpanRecord]:
    """The trace as an application sends it: the AI SDK call inside its own request span."""
    root = next(span for span in spans if not span.parent_span_id)
    handler = replace(root, span_id="f" * 16, name=name, attributes={"http.route": "/chat"}, events=())
    return [handler, *(replace(span, parent_span_id=handler.span_id) if span is root else span for span in spans)]


@pytest.mark.parametrize("name", JS_RECORDED)
def test_a_wrapping_request_span_does_not_name_the_agent(name: str) -> None:
    spans, _ = load(name)
    first_trace = [span for span in spans if span.trace_id == spans[0].trace_id]
    (run,) = runs_from_spans(wrapped(first_trace, "POST /chat"))
    assert (run.agent_name, run.input_text, run.output_text) == ("weather_agent", PARIS, CITY_ANSWERS["Paris"])


@pytest.mark.slow
@pytest.mark.parametrize("name", JS_RECORDED)
def test_recording_is_reproducible(name: str, tmp_path: Path) -> None:
    """Re-record live (node, the fake model, the OTLP receiver): the same document, the same runs."""
    folder = RECORDER_FOLDERS.get(name, "node-ai7")
    if not (FIXTURES / folder / "node_modules").exists():
        pytest.skip(f"the JavaScript recorder needs `npm ci` in tests/fixtures/traces/{folder}")
    env = {**os.environ, "SPANSCORE_FIXTURES_OUT": str(tmp_path)}
    recorder = FIXTURES.parent / "record_traces.py"
    subprocess.run([sys.executable, str(recorder), name], check=True, env=env, capture_output=True, timeout=180)
    fresh = json.loads((tmp_path / f"{name}.traces.json").read_text())
    committed = json.loads((FIXTURES / f"{name}.traces.json").read_text())
    assert without_times(fresh) == without_times(committed)
    assert [scored(run) for run in runs_from_spans(*load(name, tmp_path))] == [scored(run) for run in turns(name)]


def without_times(node: object) -> object:
    if isinstance(node, dict):
        return {key: without_times(value) for key, value in node.items() if not key.endswith("UnixNano")}
    if isinstance(node, list):
        return [without_times(item) for item in node]
    return node


META_FIELDS = {"fixture", "framework", "package", "framework_version", "instrumentation", "instrumentation_package"}
META_FIELDS |= {"instrumentation_version", "language", "recorder", "setup", "reads", "caveats", "multi_turn"}


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.meta.json")), ids=lambda path: path.name)
def test_metadata_names_the_versions_recorded(path: Path) -> None:
    """docs/frameworks.md is generated from these files: their versions are the recorder's locked ones."""
    meta = json.loads(path.read_text())
    assert META_FIELDS <= meta.keys() and meta["fixture"] == path.name.removesuffix(".meta.json")
    assert (FIXTURES / f"{meta['fixture']}.traces.json").exists()
    if meta["language"] != "JavaScript":
        return
    lock = json.loads((FIXTURES.parents[2] / meta["recorder"] / "package-lock.json").read_text())
    locked = {key.removeprefix("node_modules/"): value.get("version") for key, value in lock["packages"].items()}
    assert locked[meta["package"]] == meta["framework_version"]
    assert locked[meta["instrumentation_package"]] == meta["instrumentation_version"]


def test_both_ai_sdk_recorders_run_the_same_script() -> None:
    """node resolves packages from the script's own folder, so each AI SDK release needs its own copy."""
    copies = {(FIXTURES / folder / "record_ai_sdk.mjs").read_text() for folder in ("node-ai7", "node-ai6")}
    assert len(copies) == 1
