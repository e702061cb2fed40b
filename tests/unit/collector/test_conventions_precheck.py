"""The pre-check in ``span_facts``: plain spans skip the extractors, and no run changes because of it.

Three things keep it honest: every extractor finds nothing in a span outside the
prefixes it declares (checked against every key the extractors look up in the
recorded fixtures); ``span_facts`` with the pre-check equals ``extract_facts``
without it on arbitrary spans; and runs assembled from the recorded fixtures,
alone or among plain background spans, are identical either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recorded_traces import RECORDED, load
from test_conventions_properties import KNOWN_KEYS, attribute_values, logs, spans

from spanscore.collector.conventions import (
    crewai_tracing,
    langfuse,
    mastra,
    openinference,
    openllmetry,
    otel_genai,
    precedence,
    pydantic_ai,
    vercel_ai,
)
from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.conventions.precedence import extract_facts, may_carry_facts, span_facts
from spanscore.records import LogRecord, SpanEvent, SpanRecord
from spanscore.runs import assembly as runs
from spanscore.runs.assembly import runs_from_spans
from spanscore.runs.config import RunsConfig
from spanscore.runs.readiness import RunAssembler

TRACE = "ab" * 16
Extract = Callable[[SpanRecord], SpanFacts]
EXTRACTORS: dict[str, tuple[Extract, tuple[str, ...]]] = {
    "otel_genai": (otel_genai.attribute_facts, otel_genai.ATTRIBUTE_PREFIXES),
    "openinference": (openinference.extract, openinference.ATTRIBUTE_PREFIXES),
    "openllmetry": (openllmetry.extract, openllmetry.ATTRIBUTE_PREFIXES),
    "mastra": (mastra.extract, mastra.ATTRIBUTE_PREFIXES),
    "vercel_ai": (vercel_ai.extract, vercel_ai.ATTRIBUTE_PREFIXES),
    "pydantic_ai": (pydantic_ai.extract, pydantic_ai.ATTRIBUTE_PREFIXES),
    "crewai": (crewai_tracing.extract, crewai_tracing.ATTRIBUTE_PREFIXES),
    "langfuse": (langfuse.extract, langfuse.ATTRIBUTE_PREFIXES),
}


class RecordingAttributes(dict[str, str]):
    """An attribute map that remembers every key looked up in it."""

    looked_up: set[str]

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.looked_up = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.looked_up.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.looked_up.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.looked_up.add(str(key))
        return super().__contains__(key)


def background(span_id: str, parent: str = "", trace_id: str = TRACE, **extra: str) -> SpanRecord:
    """A span as a plain instrumented service sends it: HTTP and database attributes, nothing GenAI."""
    attributes = {"http.method": "GET", "http.status_code": "200", "component": "bench", **extra}
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=f"step-{span_id}",
        kind="Internal",
        start_time_ns=1_000 + int(span_id, 16),
        end_time_ns=2_000 + int(span_id, 16),
        service_name="bench-agent",
        attributes=attributes,
        resource_attributes={"service.name": "bench-agent", "host.name": "bench"},
    )


def _vocabulary() -> list[str]:
    """Every key the extractors look up in the recorded fixtures or an empty span, every key those carry."""
    keys = set(KNOWN_KEYS)
    fixture_spans = [span for name in RECORDED for span in load(name)[0]]
    for span in [*fixture_spans, background("01")]:
        keys.update(span.attributes)
        for extract, _ in EXTRACTORS.values():
            recording = RecordingAttributes(span.attributes)
            extract(replace(span, attributes=recording))
            keys.update(recording.looked_up)
    return sorted(keys)


VOCABULARY = _vocabulary()


@contextmanager
def extractor_calls() -> Iterator[list[str]]:
    """Every extractor call, by dialect name, while the block runs."""
    calls: list[str] = []

    def spy(name: str, function: Callable[..., SpanFacts]) -> Callable[..., SpanFacts]:
        def record(*args: Any, **kwargs: Any) -> SpanFacts:
            calls.append(name)
            return function(*args, **kwargs)

        return record

    spied = tuple(replace(dialect, extract=spy(dialect.name, dialect.extract)) for dialect in precedence.PRECEDENCE)
    with (
        mock.patch.object(precedence, "PRECEDENCE", spied),
        mock.patch.object(otel_genai, "attribute_facts", spy("otel_genai", otel_genai.attribute_facts)),
        mock.patch.object(otel_genai, "event_facts", spy("otel_genai events", otel_genai.event_facts)),
    ):
        yield calls


@contextmanager
def without_precheck() -> Iterator[None]:
    with mock.patch.object(runs, "span_facts", extract_facts):
        yield


# --- plain spans skip the extractors -----------------------------------------------------------


def test_background_spans_are_not_passed_to_extractors() -> None:
    assembler = RunAssembler(RunsConfig(quiet_period_s=1))
    trace = [background("01"), *(background(f"{n:02x}", parent="01") for n in range(2, 11))]
    exception = SpanEvent(1_500, "exception", {"exception.type": "TimeoutError"})
    trace.append(replace(background("0b", parent="01"), events=(exception,)))
    with extractor_calls() as calls:
        assembler.add_spans(trace, now_ns=0)
        (ready,) = assembler.poll_ready(now_ns=2 * 10**9)
    assert calls == []
    assert (ready.run.span_id, ready.run.service_name, ready.run.input, ready.run.tool_calls) == (
        "01",
        "bench-agent",
        None,
        None,
    )
    # The spy sees extractors when there is something to read: a GenAI span in the same shape of trace.
    agent = replace(background("0c"), trace_id="cd" * 16, attributes={"gen_ai.operation.name": "invoke_agent"})
    with extractor_calls() as calls:
        assembler.add_spans([agent], now_ns=3 * 10**9)
        (ready,) = assembler.poll_ready(now_ns=5 * 10**9)
    # Of the framework dialects, only those declaring a prefix of its one key: none (OpenLLMetry reads only the
    # flattened gen_ai.prompt.* / gen_ai.completion.* and its own usage keys of gen_ai.*).
    assert set(calls) == {"otel_genai", "otel_genai events"}
    assert ready.run.span_id == "0c"


def test_only_the_dialects_whose_prefixes_a_span_carries_are_run_and_the_memory_of_key_sets_is_bounded() -> None:
    keys = {"input.value": "q", "ai.prompt": "p", "crewai.agent.role": "r", "http.method": "GET"}
    with extractor_calls() as calls:
        span_facts(replace(background("01"), attributes=keys))
    assert calls == ["otel_genai", "openinference", "vercel_ai", "crewai", "otel_genai events"]
    many = [{f"k{n}": "v", "langfuse.observation.type": "span"} for n in range(precedence._READERS_MAX + 5)]
    assert all([d.name for d in precedence.dialects_reading(keys)] == ["langfuse"] for keys in many)
    assert len(precedence._READERS) <= precedence._READERS_MAX


@pytest.mark.parametrize(
    ("attributes", "event", "log_name"),
    [
        ({"gen_ai.request.model": "m"}, "", ""),
        ({"error.type": "TimeoutError"}, "", ""),  # the GenAI extractor reads it into Run.error
        ({"user.id": "u"}, "", ""),
        ({"input.value": "q"}, "", ""),
        ({"traceloop.span.kind": "task"}, "", ""),
        ({"mastra.span.type": "agent_run"}, "", ""),
        ({"ai.prompt": "q"}, "", ""),
        ({}, "gen_ai.choice", ""),
        ({}, "", "gen_ai.user.message"),
    ],
)
def test_spans_with_anything_a_dialect_reads_are_extracted(
    attributes: dict[str, str], event: str, log_name: str
) -> None:
    span = replace(background("01"), events=(SpanEvent(1, event, {}),) if event else ())
    span.attributes.update(attributes)
    records = [LogRecord(1, TRACE, "01", log_name, "", 0, "{}")] if log_name else []
    assert may_carry_facts(span, records)
    with extractor_calls() as calls:
        span_facts(span, records)
    assert "otel_genai" in calls
    assert not may_carry_facts(background("01"), [LogRecord(1, TRACE, "01", "app.audit", "", 0, "{}")])


# --- each extractor keeps to its declaration ----------------------------------------------------


def test_declared_prefixes_make_up_the_precheck() -> None:
    declared = {prefix for _, prefixes in EXTRACTORS.values() for prefix in prefixes}
    assert set(precedence.ATTRIBUTE_PREFIXES) == declared
    assert {dialect.name for dialect in precedence.PRECEDENCE} | {otel_genai.DIALECT} == set(EXTRACTORS)
    for dialect in precedence.PRECEDENCE:
        assert dialect.attribute_prefixes == EXTRACTORS[dialect.name][1], dialect.name


def test_the_vocabulary_holds_what_extractors_read_beyond_their_prefixes() -> None:
    """Without keys like these, the property below could not catch an undeclared read."""
    assert {"user.id", "session.id", "agent.name", "tool.name", "input", "threadId", "error.type"} <= set(VOCABULARY)


def outside(prefixes: tuple[str, ...]) -> st.SearchStrategy[dict[str, str]]:
    keys = st.sampled_from(VOCABULARY) | st.text(max_size=25)
    return st.dictionaries(keys.filter(lambda key: not key.startswith(prefixes)), attribute_values, max_size=12)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(EXTRACTORS)), st.data())
def test_an_extractor_finds_nothing_outside_its_prefixes(name: str, data: st.DataObject) -> None:
    extract, prefixes = EXTRACTORS[name]
    span = replace(background("01"), name=data.draw(st.text(max_size=20)), attributes=data.draw(outside(prefixes)))
    assert extract(span) == SpanFacts()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_event_reader_finds_nothing_outside_its_event_prefixes(data: st.DataObject) -> None:
    names = st.sampled_from(["exception", "x", "message", "choice"]) | st.text(max_size=20)
    names = names.filter(lambda text: not text.startswith(otel_genai.EVENT_PREFIXES))
    events = data.draw(st.lists(st.builds(SpanEvent, st.integers(0, 10**9), names, outside(())), max_size=3))
    body = '{"role": "user", "content": "hi", "message": {"content": "hi"}}'
    records = data.draw(st.lists(names.map(lambda name: LogRecord(1, TRACE, "01", name, "", 0, body)), max_size=3))
    span = replace(background("01"), events=tuple(events))
    assert otel_genai.event_facts(span, records) == SpanFacts()
    assert otel_genai.attribute_facts(replace(span, attributes={}), records) == SpanFacts()


# --- the same facts and runs with and without the pre-check ---------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans(), st.lists(logs, max_size=3))
def test_span_facts_equal_the_full_extraction(span: SpanRecord, records: list[LogRecord]) -> None:
    joined = [log for log in records if log.span_id == span.span_id]
    assert span_facts(span, joined) == extract_facts(span, joined)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outside(()))
def test_span_facts_of_vocabulary_spans_equal_the_full_extraction(attributes: dict[str, str]) -> None:
    span = replace(background("01"), attributes=attributes)
    assert span_facts(span) == extract_facts(span)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        spans() | st.builds(lambda attributes: replace(background("02", "01"), attributes=attributes), outside(())),
        max_size=6,
    ),
    st.lists(logs, max_size=3),
)
def test_runs_are_identical_without_the_precheck(trace: list[SpanRecord], records: list[LogRecord]) -> None:
    trace = [replace(span, trace_id="1" * 32) for span in trace]
    for config in (RunsConfig(), RunsConfig(nested_agents="all", agent_span_names=("step-02",))):
        with_precheck = runs_from_spans(trace, records, config)
        with without_precheck():
            assert runs_from_spans(trace, records, config) == with_precheck


def with_background(spans_of_run: list[SpanRecord]) -> list[SpanRecord]:
    """The recorded trace plus plain spans: children of its root, of a leaf, and a separate trace."""
    root = next(span for span in spans_of_run if not span.parent_span_id)
    leaf = spans_of_run[-1]
    extra = [
        background("f1", parent=root.span_id, trace_id=root.trace_id),
        background("f2", parent=leaf.span_id, trace_id=root.trace_id, **{"db.system": "postgresql"}),
        background("f3", trace_id="cd" * 16),
        background("f4", parent="f3", trace_id="cd" * 16),
    ]
    return [*spans_of_run, *extra]


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_fixtures_replay_to_identical_runs(name: str) -> None:
    fixture_spans, fixture_logs = load(name)
    for trace in (fixture_spans, with_background(fixture_spans)):
        expected = _ready_runs(trace, fixture_logs, precheck=False)
        assert _ready_runs(trace, fixture_logs, precheck=True) == expected
        assert len(expected) == 1 + (trace is not fixture_spans)  # the fixture's run (+ the background trace)


def _ready_runs(trace: list[SpanRecord], records: list[LogRecord], *, precheck: bool) -> list[Any]:
    assembler = RunAssembler(RunsConfig(quiet_period_s=1))
    assembler.add_spans(trace, now_ns=0)
    assembler.add_logs(records, now_ns=0)
    if precheck:
        return assembler.poll_ready(now_ns=2 * 10**9)
    with without_precheck():
        return assembler.poll_ready(now_ns=2 * 10**9)


# --- ground truth: the map pre-filter keeps the search order --------------------------------------

GROUND_TRUTH_KEYS = ("expected_output", "ground_truth", "my.answer")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from([*GROUND_TRUTH_KEYS, "other"]), st.sampled_from(["", "a", "b"])),
            st.dictionaries(st.sampled_from([*GROUND_TRUTH_KEYS, "other"]), st.sampled_from(["", "c"])),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_ground_truth_is_the_first_non_empty_key_in_config_then_span_order(
    maps: list[tuple[dict[str, str], dict[str, str]]],
) -> None:
    trace = [
        replace(
            background(f"{index + 1:02x}", parent="" if index == 0 else "01"),
            attributes=span_map,
            resource_attributes=resource_map,
        )
        for index, (span_map, resource_map) in enumerate(maps)
    ]
    (run,) = runs_from_spans(trace, config=RunsConfig(ground_truth_keys=GROUND_TRUTH_KEYS))
    expected = next(
        (
            (value, f"{where} attribute {key}")
            for key in GROUND_TRUTH_KEYS
            for span in trace
            for where, value in (("span", span.attributes.get(key)), ("resource", span.resource_attributes.get(key)))
            if value
        ),
        (None, None),
    )
    assert (run.ground_truth, run.sources.get("ground_truth")) == expected
