"""Reading spans back for the run assembler after a restart (its ``SpanSource``).

Backfill and preview rebuild runs through the same reads (``spanscore.storage.reads.recovery``), so a run
looks the same whether it was scored live, after a restart or from storage.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from spanscore.runs.recovered import RecoveredTrace
from spanscore.storage.reads.recovery import handled_runs, recent_trace_spans, trace_logs


class StoredSpanSource:
    """``SpanSource`` over a ClickHouse store (blocking; called once at start-up)."""

    def __init__(self, store: Any, *, max_traces: int = 10_000) -> None:
        self._store = store
        self._max_traces = max_traces

    def recent_traces(self, since_ns: int) -> Iterator[RecoveredTrace]:
        """The latest traces first, read a batch at a time as they are asked for (``recent_trace_spans``)."""
        for grouped in recent_trace_spans(self._store, since_ns, self._max_traces):
            logs = trace_logs(self._store, list(grouped))
            for trace_id, spans in grouped.items():
                if spans:  # a trace whose spans all went (a TTL) between the two queries
                    yield RecoveredTrace(trace_id, spans, logs.get(trace_id, []))

    def handled_runs(self, trace_ids: Iterable[str]) -> Mapping[str, Mapping[str, bool]]:
        """Every subject decided on and whether it needs nothing more (see ``storage.reads.recovery``)."""
        return handled_runs(self._store, trace_ids)
