"""The rules the Langfuse and CrewAI-tracing fixtures rely on, at their edges (#39)."""

from __future__ import annotations

import json

from spanscore.collector.conventions import span_facts
from spanscore.collector.conventions.facts import is_opaque_identifier
from spanscore.records import SpanRecord
from spanscore.runs.assembly import runs_from_spans
from spanscore.sampling.filters import parse_filter

KEY = "a3a24ae5ded50b9bea4f8e5e9e3fdd75"
QUESTION = "What is the weather in Paris?"


def span(span_id: str, attributes: dict[str, str], parent: str = "", name: str = "s") -> SpanRecord:
    return SpanRecord(
        trace_id="0" * 31 + "1",
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind="Internal",
        start_time_ns=1_000 + int(span_id, 16),
        end_time_ns=9_000 - int(span_id, 16),
        service_name="svc",
        attributes=attributes,
        resource_attributes={},
    )


def test_opaque_identifiers_are_digests_and_uuids_not_names() -> None:
    assert is_opaque_identifier(KEY)
    assert is_opaque_identifier("9036b9f2-4a17-49e4-a396-f7f29da11d3c")
    assert not is_opaque_identifier("weather_agent")
    assert not is_opaque_identifier("agent_7")
    assert not is_opaque_identifier("deadbeef")  # short hex can be a name


def test_a_role_beats_an_opaque_generic_agent_name_but_never_a_real_one() -> None:
    agent = {"gen_ai.operation.name": "invoke_agent", "crewai.agent.role": "Researcher"}
    assert span_facts(span("01", {**agent, "gen_ai.agent.name": KEY})).agent_name == "Researcher"
    assert span_facts(span("01", {**agent, "gen_ai.agent.name": "researcher"})).agent_name == "researcher"
    # With nothing better, the key still names the agent: a run is never left unnamed for it.
    assert span_facts(span("01", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": KEY})).agent_name == KEY


def test_an_unnamed_agent_span_with_the_prompt_is_the_run_one_without_only_wraps() -> None:
    """A CrewAI task holds the prompt and is the run; a wrapper with none (Agent workflow) is not."""
    inner = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "weather_agent",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "framed"}]}]),
    }
    task = {"gen_ai.operation.name": "execute_task", "crewai.task.description": "What is the weather in Paris?"}
    (run,) = runs_from_spans([span("01", task), span("02", inner, parent="01")])
    assert (run.span_id, run.input_text, run.agent_name) == ("01", "What is the weather in Paris?", "weather_agent")
    wrapper = {"openinference.span.kind": "AGENT"}
    (run,) = runs_from_spans([span("01", wrapper, name="Agent workflow"), span("02", inner, parent="01")])
    assert (run.span_id, run.input_text) == ("02", "framed")


def test_a_langfuse_call_gives_its_one_argument_else_its_keyword_arguments() -> None:
    def prompt(value: object) -> str | None:
        attributes = {"langfuse.observation.type": "agent", "langfuse.observation.input": json.dumps(value)}
        facts = span_facts(span("01", attributes, name="agent"))
        return None if facts.input is None else facts.input[0].content

    assert prompt({"args": ["What is the weather in Paris?"], "kwargs": {}}) == "What is the weather in Paris?"
    assert prompt({"args": [], "kwargs": {"question": "Paris?"}}) == "Paris?"
    assert prompt({"args": [], "kwargs": {"question": "Paris?", "units": "metric"}}) == "Paris?"
    assert prompt({"args": [], "kwargs": {"city": "Paris", "units": "metric"}}) is None  # no key says prompt
    text = span_facts(span("01", {"langfuse.observation.type": "agent", "langfuse.observation.input": "hi"}))
    assert text.input is not None and text.input[0].content == "hi"  # a string argument is sent as it is


def test_langfuse_plain_spans_and_events_are_no_kind_and_errors_are_read() -> None:
    for observation_type in ("span", "event", "guardrail"):
        assert span_facts(span("01", {"langfuse.observation.type": observation_type})).kind is None
    failed = {
        "langfuse.observation.type": "tool",
        "langfuse.observation.level": "ERROR",
        "langfuse.observation.status_message": "timeout",
    }
    assert span_facts(span("01", failed, name="get_weather")).error == "timeout"


def test_langfuse_trace_attributes_are_the_runs_to_filter_on() -> None:
    attributes = {
        "langfuse.observation.type": "agent",
        "langfuse.observation.input": json.dumps({"args": ["Paris?"], "kwargs": {}}),
        "langfuse.trace.name": "weather-chat",
        "langfuse.trace.tags": json.dumps(["weather", "demo"]),
        "langfuse.trace.metadata.plan": json.dumps("free"),
    }
    (run,) = runs_from_spans([span("01", attributes, name="weather_agent")])
    assert run.agent_name == "weather_agent"
    for where in (
        {"span.langfuse.trace.name": "weather-chat"},
        {"span.langfuse.trace.tags": {"contains": "weather"}},
        {"span.langfuse.trace.metadata.plan": '"free"'},
    ):
        assert parse_filter(where).matches(run), where
    assert not parse_filter({"span.langfuse.trace.tags": {"contains": "billing"}}).matches(run)


def test_a_langfuse_retriever_gives_the_texts_it_returned_as_context() -> None:
    documents = [{"page_content": "Paris: sunny.", "metadata": {}}, "Rome: rain.", {"id": 3}]
    attributes = {"langfuse.observation.type": "retriever", "langfuse.observation.output": json.dumps(documents)}
    assert span_facts(span("01", attributes, name="search")).documents == ("Paris: sunny.", "Rome: rain.")
    attributes["langfuse.observation.output"] = json.dumps({"answer": "none"})
    assert span_facts(span("01", attributes, name="search")).documents is None


def test_a_plain_observe_root_is_the_run_named_by_its_function() -> None:
    root = {
        "langfuse.observation.type": "span",
        "langfuse.observation.input": json.dumps({"args": [QUESTION], "kwargs": {}}),
        "langfuse.observation.output": "It is sunny.",
        "langfuse.trace.name": "weather-chat",
    }
    generation = {"langfuse.observation.type": "generation", "langfuse.observation.model.name": "m"}
    (run,) = runs_from_spans([span("01", root, name="answer_question"), span("02", generation, parent="01")])
    assert (run.agent_name, run.input_text, run.output_text) == ("answer_question", QUESTION, "It is sunny.")
    named = {**root, "langfuse.observation.type": "agent"}
    (run,) = runs_from_spans([span("01", named, name="weather_agent"), span("02", root, parent="01", name="step")])
    assert run.agent_name == "weather_agent"  # a guess never beats a name
