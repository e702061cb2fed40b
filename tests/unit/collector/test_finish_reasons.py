"""Every convention gives the run the finish reason of its model calls, and a tool span's error status.

Issue #38: the finish reason was read only from the agent (root) span, where 8 of the 10 recorded
frameworks never put it, so a cut answer passed. Here every recorded framework's run must carry the
reason its last model call reported (the recorded runs all end normally: ``stop``/``end_turn``, or a
tool call for smolagents, whose final answer is a tool), and the frameworks that report none are
named, so one that starts reporting is noticed.
"""

from __future__ import annotations

import pytest
from recorded_traces import FIXTURES, load

from spanscore.collector.conventions.finish import canonical, from_response
from spanscore.records import SpanRecord
from spanscore.runs.assembly import runs_from_spans
from spanscore.scorers import build

FRAMEWORKS = FIXTURES / "frameworks"
NAMES = sorted(path.name.removesuffix(".meta.json") for path in FRAMEWORKS.glob("*.meta.json"))
REPORT_NONE = {"ag2_openinference", "agno_openinference", "beeai_openinference", "dspy_openinference"}
REPORT_NONE |= {"openai_agents_openinference", "langfuse_observe", "langfuse_langchain"}
"""Frameworks whose recorded spans carry no finish reason anywhere (checked by hand in the fixtures). Langfuse's
generations keep the response message without its finish reason (the drop-in's and the LangChain handler's);
only LangGraph's chain spans quote it, inside the graph state, which is not a model call."""
LAST_IS_TOOL = {"smolagents_openinference"}
"""smolagents answers through its ``final_answer`` tool, so its last model call stops to call a tool."""


@pytest.mark.parametrize("name", NAMES)
def test_each_recorded_framework_gives_the_last_model_calls_finish_reason(name: str) -> None:
    spans, logs = load(name, FRAMEWORKS)
    runs = [run for run in runs_from_spans(spans, logs) if not run.missing(["input", "output"])]
    assert runs
    for run in runs:
        if name in REPORT_NONE:
            assert run.finish_reason is None, run.sources.get("finish_reasons")
        elif name in LAST_IS_TOOL:
            assert run.finish_reason == "tool_calls"
        else:
            assert run.finish_reason in ("stop", "end_turn"), (run.finish_reasons, run.sources)
            assert "finish_reasons" in run.sources


@pytest.mark.parametrize("name", NAMES)
def test_answer_health_passes_every_recorded_frameworks_healthy_runs(name: str) -> None:
    """The recorded agents answered, called their tool once and finished: no check may call that broken."""
    spans, logs = load(name, FRAMEWORKS)
    scorer = build("answer_health")
    for run in runs_from_spans(spans, logs):
        if run.output is not None:
            result = scorer.run(run)
            assert result.score == 1.0, result.reason


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('["length"]', "length"),
        (["stop", "length"], "stop"),
        ("FinishReason.CONTENT_FILTER", "content_filter"),
        ("MAX_TOKENS", "max_tokens"),
        ("content-filter", "content_filter"),
        ("", None),
        ("x" * 200, None),
    ],
)
def test_every_spelling_becomes_one_canonical_name(value: object, expected: str | None) -> None:
    assert canonical(value) == expected


def test_a_reason_inside_a_printed_response_is_found() -> None:
    assert from_response("ChatCompletion(choices=[Choice(finish_reason='length', index=0)])") == "length"
    assert from_response('{"choices": [{"finish_reason": "content_filter"}]}') == "content_filter"
    assert from_response('{"stop_reason": "max_tokens", "content": []}') == "max_tokens"


def _span(span_id: str, parent: str, name: str, start: int, attributes: dict[str, str], **extra: str) -> SpanRecord:
    return SpanRecord("t" * 32, span_id, parent, name, "Internal", start, start + 10, attributes=attributes, **extra)


AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.output.messages": "[]"}


@pytest.mark.parametrize(
    "chat",
    [
        {"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": '["length"]'},
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "text", "content": "Half"}],'
            ' "finish_reason": "length"}]',
        },
        {"openinference.span.kind": "LLM", "llm.finish_reason": "length"},
        {"openinference.span.kind": "LLM", "llm.output_messages.0.message.finish_reason": "length"},
        {"gen_ai.completion.0.content": "Half", "gen_ai.completion.0.finish_reason": "length"},
        {"ai.operationId": "ai.generateText.doGenerate", "ai.response.finishReason": "length"},
    ],
    ids=["genai-attribute", "genai-output-message", "openinference", "openinference-message", "openllmetry", "ai-sdk"],
)
def test_the_reason_on_a_model_call_span_reaches_the_run(chat: dict[str, str]) -> None:
    spans = [
        _span("a" * 16, "", "invoke_agent a", 0, AGENT),
        _span(
            "b" * 16, "a" * 16, "chat", 1, {"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": "stop"}
        ),
        _span("c" * 16, "a" * 16, "chat", 5, chat),
    ]
    (run,) = runs_from_spans(spans)
    assert run.finish_reason == "length", (run.finish_reasons, run.sources)


def test_a_tool_span_with_error_status_marks_its_call_failed() -> None:
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_balance"}
    spans = [
        _span("a" * 16, "", "invoke_agent a", 0, AGENT),
        _span("b" * 16, "a" * 16, "execute_tool", 1, tool, status_code="Error", status_message="Connection refused"),
        _span("c" * 16, "a" * 16, "execute_tool", 3, {**tool, "gen_ai.tool.call.result": "42"}),
    ]
    (run,) = runs_from_spans(spans)
    assert [(call.name, call.error) for call in run.tool_calls or ()] == [
        ("get_balance", "Connection refused"),
        ("get_balance", None),
    ]
