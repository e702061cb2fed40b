"""What the run assembler reads back from storage after a restart, and how it tells a handled run.

Kept apart from ``runs.readiness`` so that the storage side (``runs.recovery``) and the assembler share
these types without either importing the other's logic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from spanscore.records import LogRecord, SpanRecord
from spanscore.runs.assembly import AssembledRun


@dataclass(frozen=True, slots=True)
class RecoveredTrace:
    """One trace read back from storage after a restart."""

    trace_id: str
    spans: list[SpanRecord]
    logs: list[LogRecord] = field(default_factory=list)


class SpanSource(Protocol):
    """What the assembler needs from storage to recover after a restart (implemented by the storage layer)."""

    def recent_traces(self, since_ns: int) -> Iterable[RecoveredTrace]:
        """Traces with a span received at or after ``since_ns`` (Unix ns), with all their spans and GenAI logs."""
        ...

    def handled_runs(self, trace_ids: Iterable[str]) -> Mapping[str, Mapping[str, bool]]:
        """Per trace id: every subject decided on -> whether it needs nothing more.

        A subject is a run id, or a span id for span targets; it needs nothing more when every rule that
        sampled it has a score.
        """
        ...


class UndecidedSource(SpanSource, Protocol):
    """What a restart's later waves read (``scoring.recovery_waves``): the traces nothing decided on, by id."""

    def latest_span_ns(self, now_ns: int) -> int:
        """The start of the latest span stored, at most ``now_ns``: where the look-back ends."""
        ...

    def undecided_trace_ids(self, since_ns: int, before_ns: int | None = None) -> list[str]:
        """Traces with a span since ``since_ns`` that no decision, score or session turn names, the latest first.

        With ``before_ns``, only those whose spans all started before it.
        """
        ...

    def traces(self, trace_ids: list[str]) -> list[RecoveredTrace]:
        """These traces with their spans and GenAI logs (a trace with no span stored is left out)."""
        ...


def is_handled(item: AssembledRun, marks: Mapping[str, bool]) -> bool:
    """A run needs nothing more when it or its spans were decided on and every sampled one has its scores."""
    decided = [marks[subject] for subject in (item.run.run_id, *item.span_ids) if subject in marks]
    return bool(decided) and all(decided)
