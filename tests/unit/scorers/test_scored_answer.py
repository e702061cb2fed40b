"""The content scorers read exactly the answer the run page shows (#29).

Microsoft Agent Framework's agent span puts the whole turn in ``gen_ai.output.messages``: an
assistant message with no text and the tool call, the tool's result, then the answer. The run
page showed the answer, but the code scorers joined every non-tool output message with ", " and
scored ", The weather in Paris is ..." instead. One function now picks the answer; the stored
view carries it for the page and the scorers read the same text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanscore.collector.decode import parse_traces, spans_from_request
from spanscore.records import SpanRecord
from spanscore.run import Message, Run, ToolCall
from spanscore.runs.assembly import runs_from_spans
from spanscore.scorers import build
from spanscore.scorers.code.text import output_text
from spanscore.storage.scored_runs import run_from_view, run_view
from tests.fakes.fake_openai_chat import FINAL_ANSWER

QUESTION = "What is the weather in Paris?"
ANSWER = "The weather in Paris is sunny, 22 °C."
RESULT = json.dumps({"temp_c": 22, "sky": "sunny"})
MAF_OUTPUT = [
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
    },
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": RESULT}]},
    {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}], "finish_reason": "stop"},
]
"""The agent span's output messages as agent-framework-core 1.23 writes them with sensitive data on."""
CONTENT_SCORERS = ("textual_difference", "content_similarity", "completeness", "keyword_coverage", "tone_consistency")


def maf_run() -> Run:
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "weather_agent",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]),
        "gen_ai.output.messages": json.dumps(MAF_OUTPUT),
    }
    span = SpanRecord(
        trace_id="a" * 32,
        span_id="1" * 16,
        parent_span_id="",
        name="invoke_agent weather_agent",
        kind="Internal",
        start_time_ns=1,
        end_time_ns=2,
        attributes=attributes,
    )
    (run,) = runs_from_spans([span], [])
    return run


def test_the_stored_view_names_the_answer_the_page_shows() -> None:
    view = run_view(maf_run())
    assert view["answer"] == ANSWER
    # The page shows the steps (the call, the result) and then the messages marked as the answer.
    assert [message["answer"] for message in view["output"]] == [False, False, True]


def test_code_scorers_read_the_displayed_answer_of_a_whole_turn_output() -> None:
    run = maf_run()
    assert output_text(run) == ANSWER == run_view(run)["answer"]


@pytest.mark.parametrize("name", CONTENT_SCORERS)
def test_live_scores_equal_the_scores_of_the_true_answer(name: str) -> None:
    scorer = build(name)
    truth = Run(input=QUESTION, output=ANSWER)
    run = maf_run()
    assert scorer.run(run).score == scorer.run(truth).score
    # What the page shows after a round trip through storage scores the same as what was scored live.
    assert scorer.run(run_from_view(run_view(run))).score == scorer.run(truth).score


def test_a_step_text_before_a_tool_call_is_not_part_of_the_answer() -> None:
    run = Run(
        input=QUESTION,
        output=[
            Message("assistant", "Let me check the weather.", (ToolCall("get_weather", {"city": "Paris"}),)),
            Message("tool", RESULT),
            Message("assistant", ANSWER),
        ],
    )
    assert output_text(run) == run.output_text == ANSWER


_ROLES = st.sampled_from(["assistant", "tool", "user", "system", "model"])
_MESSAGES = st.lists(
    st.builds(
        lambda role, text, call: Message(role, text, (ToolCall("t"),) if call else ()),
        _ROLES,
        st.text(alphabet="ab ", max_size=6),
        st.booleans(),
    ),
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(_MESSAGES)
def test_scorers_and_page_read_one_answer_whatever_the_output(messages: list[Message]) -> None:
    run = Run(input=QUESTION, output=messages)
    assert output_text(run) == (run_view(run)["answer"] or "")
    assert not output_text(run).startswith(", ") and not output_text(run).endswith(", ")


def test_the_recorded_agent_framework_turn_is_scored_on_its_answer() -> None:
    """The real agent-framework-core recording (tests/fixtures/traces/frameworks/maf.traces.json)."""
    folder = Path(__file__).resolve().parents[2] / "fixtures" / "traces" / "frameworks"
    spans = spans_from_request(parse_traces((folder / "maf.traces.json").read_bytes(), json_body=True)).items
    first = min(runs_from_spans(spans), key=lambda run: run.start_time_ns)
    assert first.output is not None and len(first.output) == 3  # the whole turn: call, result, answer
    assert output_text(first) == run_view(first)["answer"] == FINAL_ANSWER
    truth = Run(input=first.input_text, output=FINAL_ANSWER)
    for name in CONTENT_SCORERS:
        assert build(name).run(first).score == build(name).run(truth).score, name
