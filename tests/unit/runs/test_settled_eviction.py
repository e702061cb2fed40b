"""A trace whose runs were all handed on is evicted quietly at the trace bound (#43).

Observed: with a rule, the service at 12-18k spans/s holds ``max_pending_traces`` (10,000) traces within
seconds, since a ready trace keeps its spans for late spans; from then on every new trace evicts a ready one
with a WARNING, about 2,000 log lines a second (1.3 % of the service's samples). Such an eviction loses only
the attribution of late spans, as the late-span window's end does: it is counted, and logged at debug. A trace
evicted before its runs were handed on still warns.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from bench.decision_rows import FIXTURES
from spanscore.collector.decode import parse_traces, spans_from_request
from spanscore.records import SpanRecord
from spanscore.runs.config import RunsConfig
from spanscore.runs.readiness import RunAssembler

S = 1_000_000_000


def _trace(index: int) -> list[SpanRecord]:
    spans = spans_from_request(parse_traces((FIXTURES / "openinference.traces.json").read_bytes(), json_body=True))
    return [replace(span, trace_id=f"{index + 1:032x}") for span in spans.items]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


def test_a_trace_whose_runs_were_handed_on_is_evicted_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    assembler = RunAssembler(RunsConfig(max_pending_traces=2))
    assembler.add_spans(_trace(0), 0)
    assembler.add_spans(_trace(1), 0)
    assert len(assembler.poll_ready(3 * S)) == 2  # both settled: ready, handed on, no span since
    caplog.set_level(logging.DEBUG, logger="spanscore.runs.readiness")
    assembler.add_spans(_trace(2), 4 * S)
    assert assembler.stats.evicted_traces == 1
    assert _warnings(caplog) == []
    assert any("evicted trace_id" in record.getMessage() for record in caplog.records)


def test_a_trace_evicted_before_its_runs_were_handed_on_still_warns(caplog: pytest.LogCaptureFixture) -> None:
    assembler = RunAssembler(RunsConfig(max_pending_traces=2))
    caplog.set_level(logging.DEBUG, logger="spanscore.runs.readiness")
    for index in range(3):
        assembler.add_spans(_trace(index), index)
    assert assembler.stats.evicted_traces == 1
    assert any(f"evicted trace_id={1:032x}" in message for message in _warnings(caplog))
