"""Property tests: arbitrary attribute maps, events and logs never crash the normalizer."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanscore.collector.conventions import span_facts
from spanscore.records import LogRecord, SpanEvent, SpanRecord
from spanscore.runs.assembly import runs_from_spans

KNOWN_KEYS = [
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.name",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.retrieval.documents",
    "gen_ai.usage.input_tokens",
    "gen_ai.prompt.0.role",
    "gen_ai.prompt.0.content",
    "gen_ai.completion.0.tool_calls.0.name",
    "gen_ai.prompt",
    "openinference.span.kind",
    "input.value",
    "input.mime_type",
    "output.value",
    "llm.input_messages.0.message.role",
    "llm.input_messages.0.message.contents.0.message_content.text",
    "llm.output_messages.1.message.tool_calls.0.tool_call.function.name",
    "retrieval.documents.0.document.content",
    "tool.name",
    "traceloop.span.kind",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "traceloop.entity.name",
    "ai.prompt",
    "ai.prompt.messages",
    "ai.response.toolCalls",
    "ai.toolCall.name",
    "ai.toolCall.result",
    "ai.usage.inputTokens",
    "mastra.span.type",
    "mastra.agent_run.input",
    "mastra.agent_run.output",
    "gen_ai.tool.input",
]
KIND_VALUES = [
    "invoke_agent",
    "chat",
    "execute_tool",
    "retrieval",
    "AGENT",
    "LLM",
    "TOOL",
    "RETRIEVER",
    "agent",
    "workflow",
    "tool",
    "agent_run",
    "tool_call",
    "model_generation",
    "application/json",
    "123",
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "parts",
                    "type",
                    "name",
                    "id",
                    "arguments",
                    "response",
                    "text",
                    "tool_calls",
                    "function",
                    "messages",
                    "args",
                    "kwargs",
                    "toolName",
                    "toolCallId",
                    "result",
                    "output",
                    "message",
                    "prompt",
                    "system",
                ]
            )
            | st.text(max_size=5),
            children,
            max_size=5,
        )
    ),
    max_leaves=12,
)
attribute_values = st.one_of(
    st.text(max_size=30), st.sampled_from(KIND_VALUES), json_values.map(lambda v: json.dumps(v))
)
attributes = st.dictionaries(st.sampled_from(KNOWN_KEYS) | st.text(max_size=25), attribute_values, max_size=12)
ids = st.sampled_from(["0000000000000001", "0000000000000002", "0000000000000003", ""])


@st.composite
def spans(draw: st.DrawFn) -> SpanRecord:
    span_id = draw(ids.filter(bool))
    events = draw(
        st.lists(
            st.builds(
                SpanEvent,
                time_ns=st.integers(0, 10**18),
                name=st.sampled_from(["gen_ai.user.message", "gen_ai.choice", "gen_ai.content.prompt", "x"]),
                attributes=attributes,
            ),
            max_size=3,
        )
    )
    return SpanRecord(
        trace_id="1" * 32,
        span_id=span_id,
        parent_span_id=draw(ids),
        name=draw(st.text(max_size=10)),
        kind="Internal",
        start_time_ns=draw(st.integers(0, 10**18)),
        end_time_ns=draw(st.integers(0, 10**18)),
        attributes=draw(attributes),
        status_code=draw(st.sampled_from(["Unset", "Ok", "Error"])),
        events=tuple(events),
    )


logs = st.builds(
    LogRecord,
    time_ns=st.integers(0, 10**18),
    trace_id=st.just("1" * 32),
    span_id=ids,
    event_name=st.sampled_from(
        ["gen_ai.client.inference.operation.details", "gen_ai.user.message", "gen_ai.choice", "other"]
    ),
    severity_text=st.just(""),
    severity_number=st.just(0),
    body=attribute_values,
    attributes=attributes,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans())
def test_span_facts_never_crash(span: SpanRecord) -> None:
    facts = span_facts(span)
    for name, source in facts.sources.items():
        assert getattr(facts, name) is not None and isinstance(source, str)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(spans(), max_size=5), st.lists(logs, max_size=4))
def test_runs_from_arbitrary_spans_never_crash(trace: list[SpanRecord], records: list[LogRecord]) -> None:
    for run in runs_from_spans(trace, records):
        assert run.trace_id == "1" * 32
        assert run.input is None or all(isinstance(m.content, str) for m in run.input)
        assert run.tool_calls is None or [c.order for c in run.tool_calls] == list(range(len(run.tool_calls)))
