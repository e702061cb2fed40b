"""Shapes a recorded fixture does not cover, derived from recorded spans where possible."""

from __future__ import annotations

import json
from dataclasses import replace

from recorded_traces import FIXTURES, load

from spanscore.collector.conventions import span_facts
from spanscore.records import SpanEvent, SpanRecord
from spanscore.runs.assembly import runs_from_spans

QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny and 22 C in Paris."
SYSTEM = "You are a weather assistant. Use the tools you have."


def test_per_message_events_sent_as_span_events() -> None:
    """The recorded per-message log events, moved onto their spans as span events (attributes = body fields)."""
    spans, logs = load("otel_genai_events")
    events: dict[str, list[SpanEvent]] = {}
    for log in logs:
        body = json.loads(log.body)
        attributes = {key: value if isinstance(value, str) else json.dumps(value) for key, value in body.items()}
        events.setdefault(log.span_id, []).append(SpanEvent(log.time_ns, log.event_name, attributes))
    with_events = [replace(span, events=tuple(events.get(span.span_id, ()))) for span in spans]
    (run,) = runs_from_spans(with_events)
    (from_logs,) = runs_from_spans(spans, logs)
    assert (run.input_text, run.output_text, run.system) == (QUESTION, ANSWER, SYSTEM)
    assert run.tool_calls == from_logs.tool_calls
    assert run.sources["output"].startswith("otel_genai:events gen_ai.choice")


def test_first_genai_content_events() -> None:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    span = SpanRecord(
        trace_id="c" * 32,
        span_id="1" * 16,
        parent_span_id="",
        name="chat",
        kind="Client",
        start_time_ns=1,
        end_time_ns=2,
        attributes={"gen_ai.operation.name": "chat"},
        events=(
            SpanEvent(1, "gen_ai.content.prompt", {"gen_ai.prompt": json.dumps(messages)}),
            SpanEvent(2, "gen_ai.content.completion", {"gen_ai.completion": json.dumps([{"content": ANSWER}])}),
        ),
    )
    (run,) = runs_from_spans([span])
    assert (run.input_text, run.output_text, run.system) == (QUESTION, ANSWER, SYSTEM)


def test_current_attributes_win_over_older_events() -> None:
    spans, logs = load("otel_genai")
    chat = next(span for span in spans if span.attributes.get("gen_ai.operation.name") == "chat")
    event = SpanEvent(0, "gen_ai.user.message", {"content": "an older copy"})
    facts = span_facts(replace(chat, events=(event,)))
    assert facts.input is not None and facts.input[0].content == QUESTION
    assert facts.sources["input"] == "otel_genai:gen_ai.input.messages"


def earlier_mastra_exporter(span: SpanRecord) -> SpanRecord:
    """The recorded Mastra span as the exporter before GenAI messages wrote it (generic input/output keys)."""
    attributes = dict(span.attributes)
    span_type = attributes["mastra.span.type"]
    for direction in ("input", "output"):
        value = attributes.pop(f"mastra.{span_type}.{direction}", None)
        if value is not None:
            attributes[direction] = value
    if span_type == "tool_call":
        attributes["gen_ai.tool.input"] = attributes.pop("gen_ai.tool.call.arguments")
        attributes["gen_ai.tool.output"] = attributes.pop("gen_ai.tool.call.result")
        attributes.pop("gen_ai.tool.call.id")
    if span_type == "agent_run":
        attributes["agent.id"] = attributes.pop("gen_ai.agent.name")
        attributes["gen_ai.operation.name"] = "agent.run"
    if span_type == "model_inference":
        attributes["mastra.span.type"] = "llm_generation"
        attributes["gen_ai.completion"] = attributes.pop("gen_ai.output.messages")
    return replace(span, attributes=attributes)


def test_earlier_mastra_exporter_attributes() -> None:
    spans, _ = load("mastra")
    (run,) = runs_from_spans([earlier_mastra_exporter(span) for span in spans])
    assert (run.input_text, run.output_text, run.agent_name) == (QUESTION, ANSWER, "weather_agent")
    assert run.sources["agent_name"] == "mastra:agent.id"
    assert run.tool_calls is not None
    assert [(call.name, call.arguments) for call in run.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert run.tool_calls[0].result == json.dumps({"temp_c": 22, "sky": "sunny"})


def test_openinference_chat_span_alone_is_a_run() -> None:
    """No agent span: the model call is the run; its messages supply input, system and output."""
    spans, _ = load("openinference")
    last_call = [span for span in spans if span.attributes.get("openinference.span.kind") == "LLM"][-1]
    (run,) = runs_from_spans([replace(last_call, parent_span_id="")])
    assert run.input is not None and [m.role for m in run.input] == ["user", "assistant", "tool"]
    assert run.system == SYSTEM and run.output_text == ANSWER
    assert run.tool_calls is not None and run.tool_calls == ()  # this call requested no tool
    assert run.agent_name is None


def _crewai_task_spans(change: dict[str, str | None], output: dict[str, object] | None = None) -> list[SpanRecord]:
    """The recorded CrewAI trace with its task (AGENT) span's attributes changed (None removes a key)."""
    spans, _ = load("crewai_openinference", FIXTURES / "frameworks")
    changed = []
    for span in spans:
        if span.attributes.get("openinference.span.kind") == "AGENT":
            attributes = dict(span.attributes)
            if output is not None:
                attributes["output.value"] = json.dumps({**json.loads(attributes["output.value"]), **output})
            for key, value in change.items():
                if value is None:
                    attributes.pop(key, None)
                else:
                    attributes[key] = value
            span = replace(span, attributes=attributes)
        changed.append(span)
    return changed


def test_crewai_task_output_gives_the_task_its_raw_answer_and_its_agent() -> None:
    """A named task (``ROLE.TASK._execute_core``), no graph node, messages that end without an answer."""
    ending_with_tool = [{"role": "user", "content": "Current Task: ..."}, {"role": "tool", "content": "{}"}]
    spans = _crewai_task_spans({"graph.node.id": None}, {"messages": ending_with_tool, "name": "forecast"})
    spans = [
        replace(s, name="weather_agent.forecast._execute_core") if s.name.endswith("_execute_core") else s
        for s in spans
    ]
    (run,) = runs_from_spans(spans)
    assert (run.input_text, run.output_text, run.agent_name) == (QUESTION, ANSWER, "weather_agent")
    assert run.sources["input"] == "openinference:output.value (CrewAI TaskOutput) description"
    assert run.sources["output"] == "openinference:output.value (CrewAI TaskOutput) raw"
    assert run.sources["agent_name"] == "openinference:output.value (CrewAI TaskOutput) agent"


def test_crewai_task_output_yields_to_the_span_own_input_and_agent_name() -> None:
    (run,) = runs_from_spans(_crewai_task_spans({"agent.name": "forecaster"}))
    assert run.agent_name == "forecaster"  # agent.name outranks graph.node.id
    spans = _crewai_task_spans({"input.value": "Forecast for Paris, please.", "input.mime_type": "text/plain"})
    (run,) = runs_from_spans(spans)
    assert run.input_text == "Forecast for Paris, please." and run.agent_name == "weather_agent"
    assert run.sources["agent_name"] == "openinference:graph.node.id"


def test_an_output_with_some_task_output_keys_is_not_a_task() -> None:
    """A chain's output that has a description and a raw value but no expected output is its own value."""
    spans, _ = load("crewai_openinference", FIXTURES / "frameworks")
    value = json.dumps({"description": "a report", "raw": "text", "agent": "writer"})
    task = next(s for s in spans if s.attributes.get("openinference.span.kind") == "AGENT")
    facts = span_facts(replace(task, attributes={**task.attributes, "output.value": value}))
    assert facts.input is None
    (tool_span,) = [s for s in spans if s.attributes.get("openinference.span.kind") == "TOOL"]
    graph_node = {**tool_span.attributes, "graph.node.id": "somewhere"}
    assert span_facts(replace(tool_span, attributes=graph_node)).agent_name is None  # only agent spans are named by it
