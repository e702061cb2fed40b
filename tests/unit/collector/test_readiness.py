"""Readiness: a run is ready exactly once, at the documented moment, whatever the arrival order."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import replace

import pytest
from recorded_traces import load

from spanscore.records import SpanRecord
from spanscore.runs.config import RunsConfig
from spanscore.runs.readiness import ReadyRun, RunAssembler
from spanscore.runs.recovered import RecoveredTrace

S = 1_000_000_000
T0 = 1_767_225_600 * S


def openinference_spans() -> list[SpanRecord]:
    return load("openinference")[0]


def root_of(spans: list[SpanRecord]) -> SpanRecord:
    return next(span for span in spans if not span.parent_span_id)


def test_ready_once_after_the_quiet_period() -> None:
    assembler = RunAssembler()
    spans = openinference_spans()
    assembler.add_spans(spans, T0)
    assert assembler.poll_ready(T0 + 2 * S - 1) == []
    ready = assembler.poll_ready(T0 + 2 * S)
    assert [(item.run.span_id, item.reason) for item in ready] == [(root_of(spans).span_id, "quiet_period")]
    assert ready[0].run.output_text == "It is sunny and 22 C in Paris."
    assert assembler.poll_ready(T0 + 3 * S) == []
    assert assembler.poll_ready(T0 + 100 * S) == []
    assert assembler.stats.runs_ready == 1


@pytest.mark.parametrize("seed", range(5))
def test_children_before_parents_over_many_requests(seed: int) -> None:
    spans = openinference_spans()
    root = root_of(spans)
    children = [span for span in spans if span is not root]
    random.Random(seed).shuffle(children)
    assembler = RunAssembler()
    now = T0
    for span in children:  # one export request per span, a second apart: never quiet for 2 s
        assembler.add_spans([span], now)
        assert assembler.poll_ready(now) == []
        now += S
    assembler.add_spans([root], now)
    assert assembler.poll_ready(now + 2 * S - 1) == []
    ready = assembler.poll_ready(now + 2 * S)
    assert [item.reason for item in ready] == ["quiet_period"]
    batch_run = RunAssembler()
    batch_run.add_spans(spans, T0)
    assert ready[0].fingerprint == batch_run.poll_ready(T0 + 2 * S)[0].fingerprint


def test_a_quiet_trace_without_its_root_waits_for_max_wait() -> None:
    spans = openinference_spans()
    root = root_of(spans)
    assembler = RunAssembler(RunsConfig(max_wait_s=10))
    assembler.add_spans([span for span in spans if span is not root], T0)
    assert assembler.poll_ready(T0 + 5 * S) == []
    ready = assembler.poll_ready(T0 + 10 * S)
    assert [item.reason for item in ready] == ["max_wait"]
    run = ready[0].run
    assert run.span_id == root.span_id  # rooted at the missing parent, so it keeps its identity
    assert run.input_text == "What is the weather in Paris?"  # from the first model call
    assert run.agent_name is None  # only the agent span knew it: missing, not ""
    assert assembler.poll_ready(T0 + 11 * S) == []


def test_missing_root_arriving_after_max_wait_is_the_same_run() -> None:
    spans = openinference_spans()
    root = root_of(spans)
    assembler = RunAssembler(RunsConfig(max_wait_s=10, late_span_policy="rescore"))
    assembler.add_spans([span for span in spans if span is not root], T0)
    (early,) = assembler.poll_ready(T0 + 10 * S)
    assert early.run.run_id == root.span_id
    assembler.add_spans([root], T0 + 11 * S)
    # Same run id, and what scorers read (input, output, tools, context) did not change: not ready again.
    assert assembler.poll_ready(T0 + 13 * S) == []
    assert assembler.stats.runs_ready == 1


def test_late_span_that_changes_nothing_is_not_rescored() -> None:
    """The tool span adds nothing the model messages had not said (call, arguments, result by id)."""
    spans = openinference_spans()
    tool = next(span for span in spans if span.attributes.get("openinference.span.kind") == "TOOL")
    assembler = RunAssembler(RunsConfig(late_span_policy="rescore"))
    assembler.add_spans([span for span in spans if span is not tool], T0)
    assert len(assembler.poll_ready(T0 + 2 * S)) == 1
    assembler.add_spans([tool], T0 + 3 * S)
    assert assembler.poll_ready(T0 + 10 * S) == []


def test_late_span_is_ignored_by_default() -> None:
    spans = openinference_spans()
    tool = next(span for span in spans if span.attributes.get("openinference.span.kind") == "TOOL")
    assembler = RunAssembler()
    assembler.add_spans([span for span in spans if span is not tool], T0)
    first = assembler.poll_ready(T0 + 2 * S)
    assert len(first) == 1
    assembler.add_spans([tool], T0 + 3 * S)
    assert assembler.poll_ready(T0 + 10 * S) == []
    assert assembler.stats.late_spans_ignored == 1


def test_late_span_that_changes_the_run_is_rescored_once() -> None:
    spans = openinference_spans()
    retriever = next(span for span in spans if span.attributes.get("openinference.span.kind") == "RETRIEVER")
    assembler = RunAssembler(RunsConfig(late_span_policy="rescore"))
    assembler.add_spans([span for span in spans if span is not retriever], T0)
    (first,) = assembler.poll_ready(T0 + 2 * S)
    assert first.run.context is None
    assembler.add_spans([retriever], T0 + 3 * S)
    assert assembler.poll_ready(T0 + 4 * S) == []  # quiet period restarts with the late span
    (second,) = assembler.poll_ready(T0 + 5 * S)
    assert second.reason == "late_span_rescore" and second.run.run_id == first.run.run_id
    assert second.fingerprint != first.fingerprint
    assert second.run.context == ("Paris weather service: forecasts are updated hourly.",)
    assembler.add_spans([retriever], T0 + 6 * S)  # the same span again changes nothing
    assert assembler.poll_ready(T0 + 9 * S) == []
    assert assembler.stats.runs_rescored == 1


def test_oldest_trace_is_evicted_and_counted() -> None:
    spans = openinference_spans()
    assembler = RunAssembler(RunsConfig(max_pending_traces=2))
    for index in range(3):
        trace_id = f"{index + 1:032x}"
        assembler.add_spans([replace(span, trace_id=trace_id) for span in spans], T0 + index)
    assert assembler.pending_trace_ids() == [f"{2:032x}", f"{3:032x}"]
    assert (assembler.stats.evicted_traces, assembler.stats.evicted_spans) == (1, len(spans))
    assert assembler.stats.pending_spans == 2 * len(spans)
    ready = assembler.poll_ready(T0 + 3 * S)
    assert sorted((item.run.trace_id, item.reason) for item in ready) == [
        (f"{1:032x}", "evicted"),  # handed on as it went (whole: its root had arrived), never dropped
        (f"{2:032x}", "quiet_period"),
        (f"{3:032x}", "quiet_period"),
    ]


def test_span_bound_evicts_too() -> None:
    spans = openinference_spans()
    assembler = RunAssembler(RunsConfig(max_pending_spans=len(spans) + 1))
    assembler.add_spans(spans, T0)
    assembler.add_spans([replace(span, trace_id="f" * 32) for span in spans[:2]], T0 + 1)
    assert assembler.stats.evicted_traces == 1 and assembler.pending_trace_ids() == ["f" * 32]


def test_handled_traces_leave_memory_after_the_late_window() -> None:
    assembler = RunAssembler(RunsConfig(late_span_window_s=30))
    assembler.add_spans(openinference_spans(), T0)
    assert assembler.unready_trace_ids() != []
    assert len(assembler.poll_ready(T0 + 2 * S)) == 1
    assert assembler.pending_trace_ids() != []
    assert assembler.unready_trace_ids() == []  # handed on: a stopping replica does not list it for others
    assembler.poll_ready(T0 + 30 * S)
    assert assembler.pending_trace_ids() == [] and assembler.stats.pending_spans == 0
    assembler.add_spans(openinference_spans(), T0 + 31 * S)  # replayed by a client: not ready again
    assert assembler.poll_ready(T0 + 100 * S) == []


def test_logs_join_their_spans() -> None:
    spans, logs = load("otel_genai_logs")
    assembler = RunAssembler()
    assembler.add_logs(logs, T0)
    assembler.add_spans(spans, T0 + 1)
    (ready,) = assembler.poll_ready(T0 + 3 * S)
    assert ready.run.input_text == "What is the weather in Paris?"
    assert ready.run.system == "You are a weather assistant. Use the tools you have."


class FakeStorage:
    def __init__(self, traces: list[RecoveredTrace], handled: Mapping[str, Mapping[str, bool]]) -> None:
        self.traces, self.handled, self.asked_since = traces, handled, 0

    def recent_traces(self, since_ns: int) -> Iterable[RecoveredTrace]:
        self.asked_since = since_ns
        return self.traces

    def handled_runs(self, trace_ids: Iterable[str]) -> Mapping[str, Mapping[str, bool]]:
        return {trace_id: self.handled[trace_id] for trace_id in trace_ids if trace_id in self.handled}


def test_restart_recovers_pending_runs_and_skips_handled_ones() -> None:
    before = RunAssembler()
    done = openinference_spans()
    pending = [replace(span, trace_id="e" * 32) for span in done]
    before.add_spans(done, T0)
    (handled,) = before.poll_ready(T0 + 2 * S)
    before.add_spans(pending, T0 + 2 * S)  # acknowledged, then the process dies before it is ready
    storage = FakeStorage(
        [RecoveredTrace(done[0].trace_id, done), RecoveredTrace("e" * 32, pending)],
        {done[0].trace_id: {handled.run.run_id: True}},
    )
    after = RunAssembler()
    since = after.recovery_since(T0 + 10 * S)
    assert since == T0 + 10 * S - int((60 + 300) * S)
    assert after.recover(storage, since, T0 + 10 * S) == 2
    assert storage.asked_since == since
    assert after.poll_ready(T0 + 11 * S) == []
    ready = after.poll_ready(T0 + 12 * S)
    assert [(item.run.trace_id, item.reason) for item in ready] == [("e" * 32, "quiet_period")]
    assert after.poll_ready(T0 + 100 * S) == []


def test_a_recovery_takes_the_latest_traces_up_to_half_the_bounds_and_evicts_none() -> None:
    """A restart after LLM-sized traffic read 10,000 traces into an assembler that holds 256 MiB: most of what it
    read was evicted again as it went, each eviction a run handed on early or decided ``too_large``, and the
    service peaked at 3.7 GiB. Now the latest traces come first and reading stops at half of any bound."""
    config = RunsConfig(max_pending_bytes=40 << 20)
    big = "x" * 5_000
    traces = [
        RecoveredTrace(
            f"{index:032x}",
            [
                SpanRecord(
                    trace_id=f"{index:032x}",
                    span_id=f"{index:08x}{child:08x}",
                    parent_span_id="" if child == 0 else f"{index:08x}{0:08x}",
                    name="step",
                    kind="Internal",
                    start_time_ns=T0,
                    end_time_ns=T0 + 1,
                    service_name="svc",
                    attributes={"text": big},
                    resource_attributes={},
                )  # fmt: skip
                for child in range(10)
            ],
        )
        for index in range(2_000)  # about 100 MB of text, latest first
    ]
    taken: list[str] = []

    class Latest(FakeStorage):
        def recent_traces(self, since_ns: int) -> Iterable[RecoveredTrace]:
            for trace in self.traces:  # read as asked: what is not asked for is not read
                taken.append(trace.trace_id)
                yield trace

    after = RunAssembler(config)
    loaded = after.recover(Latest(traces, {}), T0, T0 + 10 * S)
    # stopped, within the chunk it was adopting: nothing read past that chunk
    assert 0 < loaded < len(traces) and loaded <= len(taken) <= loaded + after.recovery_chunk
    assert after.stats.evicted_traces == 0 and after.stats.too_large_traces == 0
    assert config.max_pending_bytes // 2 <= after.stats.pending_bytes < config.max_pending_bytes // 2 + 100_000
    assert after.pending_trace_ids() == [trace.trace_id for trace in traces[:loaded]]  # the latest ones


def _small_trace(index: int, start: int) -> list[SpanRecord]:
    root = f"{index:08x}{0:08x}"
    return [
        SpanRecord(
            trace_id=f"{index:032x}",
            span_id=f"{index:08x}{child:08x}",
            parent_span_id="" if child == 0 else root,
            name="step",
            kind="Internal",
            start_time_ns=start,
            end_time_ns=start + 1,
            service_name="svc",
            attributes={},
            resource_attributes={},
        )  # fmt: skip
        for child in range(3)
    ]


def test_the_defaults_hold_three_seconds_of_4000_traces_a_second_without_handing_runs_on_early() -> None:
    """At 10,000 traces a service taking 4,000 traces/s (40,000 spans/s in traces of 10) handed 57% of its runs on
    before their quiet period ended (an independent check saw 73-83k of about 150k per minute at 2,500 traces/s).
    Waiting traces get the room now, and settled ones keep the old bound: memory for late spans is as it was."""
    assembler, now, index = RunAssembler(), T0, 0
    ready: list[ReadyRun] = []
    for _ in range(60):  # 6 s at 4,000 traces/s, polled every 100 ms as the service does
        now += S // 10
        for _ in range(400):
            assembler.add_spans(_small_trace(index, now), now)
            index += 1
        ready += assembler.poll_ready(now)
    assert len(assembler.pending_trace_ids()) > 10_000  # more than the old bound held at once
    assert assembler.stats.evicted_runs_early == 0 and assembler.stats.too_large_traces == 0
    assert ready and all(item.reason == "quiet_period" for item in ready)
    assert len(assembler.pending_trace_ids()) - len(assembler.unready_trace_ids()) <= RunsConfig().max_settled_traces


def test_settled_traces_beyond_their_bound_are_forgotten_but_their_runs_stay_handled() -> None:
    assembler = RunAssembler(RunsConfig(max_settled_traces=100))
    traces = [_small_trace(index, T0) for index in range(300)]
    for spans in traces:
        assembler.add_spans(spans, T0)
    assert len(assembler.poll_ready(T0 + 3 * S)) == 300
    assert len(assembler.pending_trace_ids()) == 100  # the 100 latest settled; the others' spans are gone
    assert assembler.stats.evicted_traces == 200 and assembler.stats.evicted_runs_early == 0
    assembler.add_spans([replace(traces[0][1], span_id="f" * 16)], T0 + 4 * S)  # a late span of a forgotten one
    assert assembler.poll_ready(T0 + 10 * S) == []  # its run was handed on once and is not again


def agent_span(span_id: str, parent: str, start: int, name: str) -> SpanRecord:
    return SpanRecord(
        trace_id="d" * 32,
        span_id=span_id,
        parent_span_id=parent,
        name=f"invoke_agent {name}",
        kind="Internal",
        start_time_ns=start,
        end_time_ns=start + 5,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
    )


def test_two_agent_runs_in_one_trace_are_ready_separately_once() -> None:
    root = replace(agent_span("01", "", 0, "x"), name="POST /chat", attributes={})
    spans = [agent_span("02", "01", 1, "a"), agent_span("03", "01", 10, "b"), root]
    assembler = RunAssembler()
    assembler.add_spans(spans, T0)
    ready = assembler.poll_ready(T0 + 2 * S)
    assert sorted((item.run.agent_name, item.reason) for item in ready) == [
        ("a", "quiet_period"),
        ("b", "quiet_period"),
    ]
    assert assembler.poll_ready(T0 + 60 * S) == []


def test_agent_under_a_root_still_open_waits_unless_every_agent_is_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import spanscore.runs.readiness as readiness

    calls = []
    original = readiness.assemble_runs
    monkeypatch.setattr(readiness, "assemble_runs", lambda *a, **k: calls.append(1) or original(*a, **k))
    spans = [agent_span("02", "01", 1, "a")]  # the session span "01" is still open
    waiting = RunAssembler(RunsConfig(max_wait_s=30))
    waiting.add_spans(spans, T0)
    for second in range(2, 30):
        assert waiting.poll_ready(T0 + second * S) == []
    assert len(calls) == 1  # assembled once at the quiet period, not on every poll
    assert [item.reason for item in waiting.poll_ready(T0 + 30 * S)] == ["max_wait"]
    eager = RunAssembler(RunsConfig(max_wait_s=30, nested_agents="all"))
    eager.add_spans(spans, T0)
    assert [item.reason for item in eager.poll_ready(T0 + 2 * S)] == ["quiet_period"]


def test_logs_without_spans_are_dropped_after_the_windows() -> None:
    _, logs = load("otel_genai_logs")
    assembler = RunAssembler(RunsConfig(max_wait_s=10, late_span_window_s=5))
    assembler.add_logs(logs, T0)
    assert assembler.poll_ready(T0 + 10 * S) == [] and assembler.pending_trace_ids() != []
    assert assembler.poll_ready(T0 + 15 * S) == [] and assembler.pending_trace_ids() == []


def test_a_trace_that_never_goes_quiet_is_ready_at_max_wait() -> None:
    spans = openinference_spans()
    assembler = RunAssembler(RunsConfig(max_wait_s=10))
    for second, span in enumerate(spans * 3):  # the same spans again and again, one per second
        assembler.add_spans([span], T0 + second * S)
        ready = assembler.poll_ready(T0 + second * S)
        if second < 10:
            assert ready == []
        elif second == 10:
            assert [item.reason for item in ready] == ["max_wait"]
        else:
            assert ready == []


def test_log_records_count_against_the_memory_bound() -> None:
    spans, logs = load("otel_genai_logs")
    assembler = RunAssembler(RunsConfig(max_pending_spans=len(spans) + len(logs)))
    assembler.add_spans(spans, T0)
    assembler.add_logs(logs, T0)
    assert assembler.stats.pending_spans == len(spans) + len(logs) and assembler.stats.evicted_traces == 0
    assembler.add_logs([replace(logs[0], trace_id="9" * 32)], T0 + 1)
    assert assembler.stats.evicted_traces == 1 and assembler.stats.pending_spans == 1


def test_restart_rescores_a_run_whose_span_level_score_was_cut_short() -> None:
    """A run counts as handled only when it or its spans were decided and every sampled subject has its scores."""
    spans = openinference_spans()
    trace_id = spans[0].trace_id
    before = RunAssembler()
    before.add_spans(spans, T0)
    (ready,) = before.poll_ready(T0 + 2 * S)
    child = next(span.span_id for span in spans if span.span_id != ready.run.span_id)
    cases = {
        "only a span decided, scored": ({child: True}, []),
        "a span decided, its score missing": ({child: False}, [trace_id]),
        "the run scored, a span's score missing": ({ready.run.run_id: True, child: False}, [trace_id]),
        "nothing decided": ({}, [trace_id]),
    }
    for name, (marks, expected) in cases.items():
        storage = FakeStorage([RecoveredTrace(trace_id, spans)], {trace_id: marks} if marks else {})
        after = RunAssembler()
        after.recover(storage, T0, T0 + 10 * S)
        assert [item.run.trace_id for item in after.poll_ready(T0 + 13 * S)] == expected, name
