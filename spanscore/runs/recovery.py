"""Reading spans back for the run assembler after a restart (its ``SpanSource``).

Backfill and preview rebuild runs through the same reads (``spanscore.storage.reads.recovery``), so a run
looks the same whether it was scored live, after a restart or from storage.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from spanscore.records import SpanRecord
from spanscore.runs.recovered import RecoveredTrace
from spanscore.storage.reads.recovery import (
    handled_runs,
    latest_span_ns,
    recent_trace_spans,
    trace_logs,
    trace_spans,
    undecided_trace_ids,
)

MAX_UNDECIDED_TRACES = 200_000
"""Undecided traces a restart lists to adopt in waves (ids only, about 20 MB): 50 s of 4,000 traces/s."""


class StoredSpanSource:
    """``SpanSource`` over a ClickHouse store (blocking; called once at start-up)."""

    def __init__(self, store: Any, *, max_traces: int = 10_000, max_undecided: int = MAX_UNDECIDED_TRACES) -> None:
        self._store = store
        self._max_traces = max_traces
        self._max_undecided = max_undecided

    def recent_traces(self, since_ns: int) -> Iterator[RecoveredTrace]:
        """The latest traces first, read a batch at a time as they are asked for (``recent_trace_spans``)."""
        for grouped in recent_trace_spans(self._store, since_ns, self._max_traces):
            yield from self._with_logs(grouped)

    def undecided_trace_ids(self, since_ns: int, before_ns: int | None = None) -> list[str]:
        """Traces since ``since_ns`` that nothing decided on, the latest first (``undecided_trace_ids``)."""
        return undecided_trace_ids(self._store, since_ns, self._max_undecided, before_ns)

    def traces(self, trace_ids: list[str]) -> list[RecoveredTrace]:
        """These traces with their spans and GenAI logs, in the order given (traces with no span left out)."""
        return list(self._with_logs(trace_spans(self._store, trace_ids)))

    def latest_span_ns(self, now_ns: int) -> int:
        """The start of the latest span stored, at most ``now_ns``: where a restart's look-back ends."""
        return latest_span_ns(self._store, now_ns)

    def _with_logs(self, grouped: dict[str, list[SpanRecord]]) -> Iterator[RecoveredTrace]:
        logs = trace_logs(self._store, list(grouped))
        for trace_id, spans in grouped.items():
            if spans:  # a trace whose spans all went (a TTL) between the two queries
                yield RecoveredTrace(trace_id, spans, logs.get(trace_id, []))

    def handled_runs(self, trace_ids: Iterable[str]) -> Mapping[str, Mapping[str, bool]]:
        """Every subject decided on and whether it needs nothing more (see ``storage.reads.recovery``)."""
        return handled_runs(self._store, trace_ids)
