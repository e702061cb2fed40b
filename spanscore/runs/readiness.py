"""When a run is ready to score: the run assembler between the receivers and sampling.

Spans and GenAI log records are added as they arrive (any order, any split
over export requests); ``poll_ready`` returns each run once, when

- ``quiet_period``: its root span has arrived (spans are exported when they
  end) with a confirmed root (see ``AssembledRun.root_confirmed``), and no span
  of its trace arrived for ``quiet_period_s``; or
- ``max_wait``: ``max_wait_s`` passed since the first span of its trace
  arrived, whatever is missing;
- ``late_span_rescore``: with ``late_span_policy="rescore"``, a span arrived
  after the run was ready and changed what scorers read (its fingerprint).

Memory is bounded: at most ``max_pending_traces`` traces (of them at most ``max_settled_traces`` settled),
``max_pending_spans`` spans and ``max_pending_bytes`` estimated bytes (``runs.sizes``) are held; beyond
that a trace is evicted and counted. A settled trace (its runs all handed on, no span since) goes first,
oldest settled first: it loses only late-span attribution, as at the window's end (a debug line). Only when
none is left does the oldest trace still waiting go, and its runs are handed on as it goes (reason
``evicted``), decided ``too_large`` with the bound that cut them named: a run is never dropped without a
decision. Those evictions are logged as a warning, the first with its trace id, then one line per
``_EVICTION_LOG_INTERVAL_NS`` with a count, so an overloaded assembler does not also flood its log. One
trace holds at most ``max_run_bytes``: later spans of it are dropped, and its runs are handed on marked
``too_large`` once it is quiet (its root will not come, being among what is dropped). A ready trace keeps
its spans for ``late_span_window_s`` so late spans can be attributed, then only its handled run ids are
remembered (``max_done_traces``). After a restart, ``recover`` re-reads recent traces
from storage through ``SpanSource`` and skips the runs storage says were
handled, so nothing acknowledged is lost and nothing is scored twice.

Pure logic with an injected clock (``now_ns`` arguments): no threads, no I/O.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from spanscore.records import LogRecord, SpanRecord
from spanscore.run import Run
from spanscore.runs.assembly import AssembledRun, SelectedShare, assemble_runs, full_run, run_fingerprint
from spanscore.runs.config import RunsConfig
from spanscore.runs.recovered import RecoveredTrace, SpanSource, is_handled
from spanscore.runs.sizes import log_bytes, span_bytes

logger = logging.getLogger(__name__)

ReadyReason = Literal["quiet_period", "max_wait", "late_span_rescore", "evicted"]
_NS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class ReadyRun:
    """A run to hand to sampling, why it is ready now, and the digest a rescore is compared against."""

    run: Run
    reason: ReadyReason
    fingerprint: str
    views: tuple[Run, ...] = ()
    """The run's span-level views of the targets the assembler was asked for (``RunAssembler.span_targets``)."""
    too_large: str = ""
    """Why the run's trace was cut, or evicted at a bound before the run was ready, or empty: sampling decides
    such a run ``too_large``."""
    complete: Callable[[], tuple[Run, tuple[Run, ...]]] | None = None
    """Set when ``run`` is only its filter view, since no rule could select it (``runs.selection``): builds the
    full run and its span views again from the trace's spans. It holds those spans, not the view's builder:
    what the builder held (every span's facts) would outlive the poll and make the collector's passes longer."""
    held_bytes: int = 0
    """Estimated bytes of its trace's spans and logs when it was handed on, shared among the trace's runs then:
    what the run keeps alive while it waits to be decided (a filter view's ``complete`` holds every span)."""
    shed: str = ""
    """Why it is decided but not scored although it was ready to be (``RunAssembler.shed_evicted``: scoring was
    behind), or empty. Its rules draw as usual; a ``sampled`` draw becomes ``too_large`` with this reason."""

    def completed(self) -> ReadyRun:
        """The ready run built in full (itself when it already is), for rules that changed before they decided."""
        if self.complete is None:
            return self
        run, views = self.complete()
        return replace(self, run=run, fingerprint=run_fingerprint(run), views=views, complete=None)


@dataclass(slots=True)
class AssemblerStats:
    """Counters for metrics and tests."""

    pending_traces: int = 0
    pending_spans: int = 0
    """Spans and log records held (both count against ``max_pending_spans``)."""
    pending_bytes: int = 0
    """Estimated bytes of the spans and log records held (``max_pending_bytes``)."""
    too_large_traces: int = 0
    """Traces cut (``max_run_bytes``) or evicted at a bound before their runs were all handed on: the decision
    ``too_large``."""
    too_large_records: int = 0
    """Spans and log records dropped because their trace was over ``max_run_bytes``."""
    evicted_traces: int = 0
    evicted_spans: int = 0
    evicted_runs_early: int = 0
    """Runs of traces evicted at a bound before their quiet period ended, handed on whole (their root had
    arrived), not decided ``too_large``."""
    runs_shed: int = 0
    """Runs evicted while scoring was behind, past what may wait for the ready line (``shed_evicted``): drawn as
    usual, not scored (a ``sampled`` draw decided ``too_large``)."""
    late_spans_ignored: int = 0
    conflicting_spans_ignored: int = 0
    """Spans whose id another service's span in the same trace already holds: the first service keeps it."""
    runs_ready: int = 0
    runs_rescored: int = 0
    recovered_traces: int = 0


@dataclass(slots=True)
class _Trace:
    first_arrival_ns: int
    last_arrival_ns: int
    spans: dict[str, SpanRecord] = field(default_factory=dict)
    logs: list[LogRecord] = field(default_factory=list)
    handled: dict[str, str] = field(default_factory=dict)
    """Run id -> fingerprint of the runs already returned by ``poll_ready``."""
    handled_spans: set[str] = field(default_factory=set)
    ready_since_ns: int | None = None
    dirty: bool = True
    """Spans or logs arrived since the trace was last assembled."""
    waiting: bool = False
    """A run had an unconfirmed root at the last assembly: look again at max_wait even without new spans."""
    size: int = 0
    """Estimated bytes of its spans and logs."""
    too_large: str = ""
    """Why something was dropped from it for size, or empty (logged once)."""


class RunAssembler:
    """Collects spans per trace and says when each agent run is ready (see the module docstring)."""

    def __init__(self, config: RunsConfig | None = None) -> None:
        self.config = config or RunsConfig()
        self.stats = AssemblerStats()
        self._pending: OrderedDict[str, _Trace] = OrderedDict()
        self._settled: OrderedDict[str, None] = OrderedDict()
        """Ids of held traces whose runs were all handed on, with no span since, in the order they settled:
        what a bound evicts first."""
        self._revisited: OrderedDict[str, None] = OrderedDict()
        """Ids of held traces with runs handed on that took a span since (a late span; or a trace forgotten, then
        a span of it), in that order: a bound evicts them after the settled ones and before any trace still
        waiting for its first runs, since what they got is mostly late spans of runs already decided. Left in
        arrival order among the others, a burst of late spans evicted live traces before their quiet period."""
        self._unwarned_evictions = 0
        """Traces evicted while waiting since the last warning line (``_EVICTION_LOG_INTERVAL_NS``)."""
        self._warned_ns: int | None = None
        self._done: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._clock_ns = 0
        self._evicted: list[ReadyRun] = []
        """Runs of traces evicted at a bound before they were ready, handed on by the next poll (or shed)."""
        self.evicted_bytes = 0
        """What the runs in ``_evicted`` keep alive (``ReadyRun.held_bytes``), a gauge with ``evicted_waiting``."""
        self.span_targets: frozenset[str] = frozenset()
        """Span-level targets (``llm``, ``tool``, ``retrieval``) whose views ready runs carry; set by live scoring."""
        self.selects: Callable[[Run], bool] | None = None
        """Whether some rule may select a run, asked of its filter view before it is built in full
        (``runs.selection``); None builds every run. Set by live scoring with the rules."""
        self.selected_share = SelectedShare()
        """How many recent runs ``selects`` chose: whether spans are read for their views first."""

    # --- intake ---------------------------------------------------------------------------

    def add_spans(self, spans: Iterable[SpanRecord], now_ns: int) -> None:
        """Take spans as they arrive; order and batching do not matter, a repeated span replaces its copy.

        A run belongs to the service that sent it: a span whose id another service's span of the trace
        already holds is ignored and counted, so a second service cannot take over (or rescore) the run.
        """
        self._clock_ns = max(self._clock_ns, now_ns)
        trace_id, trace = "", None
        for span in spans:
            if trace is None or span.trace_id != trace_id:
                # A trace's spans mostly arrive together: one lookup per trace, not per span (nothing is evicted
                # before the loop ends, so the trace found stays the one held).
                trace_id, trace = span.trace_id, self._trace_for(span.trace_id, now_ns)
            held = trace.spans.get(span.span_id)
            if held is not None and held.service_name != span.service_name:
                self.stats.conflicting_spans_ignored += 1
                continue
            if span.span_id in trace.handled_spans and self.config.late_span_policy == "ignore":
                self.stats.late_spans_ignored += 1
                continue
            held_size = span_bytes(held) if held is not None else 0
            if not self._fits(trace, span.trace_id, span_bytes(span) - held_size):
                continue
            if span.span_id not in trace.spans:
                self.stats.pending_spans += 1
            trace.spans[span.span_id] = span
            trace.last_arrival_ns = now_ns
            if not trace.dirty:
                self._dirtied(span.trace_id, trace)
        self._enforce_bounds()

    def _dirtied(self, trace_id: str, trace: _Trace) -> None:
        """A held trace took a span or log record since it was last looked at: it is waiting again.

        If some of its runs were handed on it is a revisited one (``_revisited``), evicted before traces still
        waiting for their first runs.
        """
        self._settled.pop(trace_id, None)
        trace.dirty = True
        if trace.handled:
            self._revisited[trace_id] = None

    def add_logs(self, logs: Iterable[LogRecord], now_ns: int | None = None) -> None:
        """Take GenAI log records; they join their span by trace and span id when runs are built."""
        now = self._clock_ns if now_ns is None else max(self._clock_ns, now_ns)
        self._clock_ns = now
        for log in logs:
            if not log.trace_id:
                continue
            trace = self._trace_for(log.trace_id, now)
            if not self._fits(trace, log.trace_id, log_bytes(log)):
                continue
            trace.logs.append(log)
            if not trace.dirty:
                self._dirtied(log.trace_id, trace)
            self.stats.pending_spans += 1
        self._enforce_bounds()

    def _fits(self, trace: _Trace, trace_id: str, grows: int) -> bool:
        """Account ``grows`` bytes to the trace, or refuse them (decision ``too_large``) when over ``max_run_bytes``."""
        if grows > 0 and trace.size + grows > self.config.max_run_bytes:
            self.stats.too_large_records += 1
            if not trace.too_large:
                trace.too_large = (
                    f"the trace was cut at collector.runs.max_run_bytes ({self.config.max_run_bytes} bytes), "
                    "its later spans dropped"
                )
                self.stats.too_large_traces += 1
                logger.warning(
                    "run assembler: decision=too_large trace_id=%s holds %d bytes, max_run_bytes=%d: later spans "
                    "are dropped",
                    trace_id,
                    trace.size,
                    self.config.max_run_bytes,
                )
            return False
        trace.size += grows
        self.stats.pending_bytes += grows
        return True

    def _trace_for(self, trace_id: str, now_ns: int) -> _Trace:
        trace = self._pending.get(trace_id)
        if trace is not None:
            return trace
        # Spans of a forgotten trace can still start a new run (a later agent in the same trace), but a
        # run handled before is never returned again from it: its other spans are gone, so a changed
        # fingerprint would only mean "partial", hence no fingerprint ("" never triggers a rescore).
        forgotten = self._done.pop(trace_id, {})
        trace = _Trace(first_arrival_ns=now_ns, last_arrival_ns=now_ns, handled=dict.fromkeys(forgotten, ""))
        self._pending[trace_id] = trace
        if forgotten:
            self._revisited[trace_id] = None
        self.stats.pending_traces = len(self._pending)
        return trace

    def _enforce_bounds(self) -> None:
        config = self.config
        while self._pending and (
            len(self._pending) > config.max_pending_traces
            or self.stats.pending_spans > config.max_pending_spans
            or self.stats.pending_bytes > config.max_pending_bytes
            or len(self._settled) > config.max_settled_traces
        ):
            bound = self._bound_passed()
            settled = bool(self._settled)  # the oldest trace held is a waiting one only when none is settled
            if settled:
                trace_id, _ = self._settled.popitem(last=False)
                trace = self._pending.pop(trace_id)
            elif self._revisited:
                trace_id, _ = self._revisited.popitem(last=False)
                trace = self._pending.pop(trace_id)
            else:
                trace_id, trace = self._pending.popitem(last=False)
            self._revisited.pop(trace_id, None)
            self.stats.evicted_traces += 1
            self.stats.evicted_spans += len(trace.spans)
            self._release(trace)
            runs = [] if settled else self._evicted_runs(trace, bound)
            self._evicted.extend(runs)
            self.evicted_bytes += sum(run.held_bytes for run in runs)
            self._remember(trace_id, trace.handled)
            cut = sum(1 for run in runs if run.too_large)
            self.stats.too_large_traces += bool(cut) and not trace.too_large  # a cut trace was counted when cut
            self.stats.evicted_runs_early += len(runs) - cut
            if settled or not runs:
                logger.debug(
                    "run assembler over capacity: evicted trace_id=%s spans=%d, its runs were handed on before",
                    trace_id,
                    len(trace.spans),
                )
            else:
                self._warn_evicted(trace_id, trace, bound, len(runs) - cut, cut)
        self.stats.pending_traces = len(self._pending)

    def _bound_passed(self) -> str:
        """The bound the assembler is over, named as its setting with its value."""
        config = self.config
        if self.stats.pending_bytes > config.max_pending_bytes:
            return f"collector.runs.max_pending_bytes ({config.max_pending_bytes} bytes)"
        if self.stats.pending_spans > config.max_pending_spans:
            return f"collector.runs.max_pending_spans ({config.max_pending_spans})"
        return f"collector.runs.max_pending_traces ({config.max_pending_traces})"

    def _warn_evicted(self, trace_id: str, trace: _Trace, bound: str, early: int, cut: int) -> None:
        """A warning for the first trace evicted while waiting, then one line per interval with a count."""
        now = self._clock_ns
        if self._warned_ns is not None and now - self._warned_ns < _EVICTION_LOG_INTERVAL_NS:
            self._unwarned_evictions += 1
            return
        more = f" (and {self._unwarned_evictions} more traces since the last line)" if self._unwarned_evictions else ""
        self._warned_ns, self._unwarned_evictions = now, 0
        logger.warning(
            "run assembler over capacity: evicted trace_id=%s spans=%d bytes=%d before its quiet period ended, "
            "over %s%s; %d of its runs handed on early (their root had arrived), %d decided too_large (no root "
            "yet, or cut). Raise the bound or shorten collector.runs.quiet_period_s",
            trace_id,
            len(trace.spans),
            trace.size,
            bound,
            more,
            early,
            cut,
        )

    def _evicted_runs(self, trace: _Trace, bound: str) -> list[ReadyRun]:
        """The runs of a trace evicted at a bound before they were all handed on.

        A run whose root span has arrived is handed on now, whole: spans are exported as they end and a root
        ends after what it holds, so only the quiet period's margin is cut short, and a score a little early
        beats none. That is the overloaded case: at 38,000 small spans/s the default bound holds about 2.6 s
        of traces, and with a rule that selected them 67% of all runs were decided ``too_large``, unscored.
        A run whose root has not arrived (more is surely coming), or of a trace cut at ``max_run_bytes``, is
        decided ``too_large`` with the bound named. Either way the reason is ``evicted``
        (``score_decisions.ReadyReason``), and late spans of the trace are not attributed to it again (the
        trace is forgotten but for its run ids).
        """
        why = trace.too_large or f"the trace was evicted before its runs were ready: pending traces held over {bound}"
        out = []
        assembled = self._assemble(trace)
        held = trace.size // max(1, len(assembled))
        for item in assembled:
            if item.run.run_id not in trace.handled:
                trace.handled[item.run.run_id] = ""
                fingerprint = run_fingerprint(item.run) if not item.view else ""
                cut = "" if item.root_confirmed and not trace.too_large else why
                completion = self._completion(trace, item)
                out.append(ReadyRun(item.run, "evicted", fingerprint, item.views, cut, completion, held))
        return out

    @property
    def evicted_waiting(self) -> int:
        """Runs evicted at a bound that wait for the next poll (a gauge)."""
        return len(self._evicted)

    def take_evicted(self) -> list[ReadyRun]:
        """The runs evicted at a bound since the last poll, taken (a poll takes them first; so does a stop)."""
        taken, self._evicted, self.evicted_bytes = self._evicted, [], 0
        return taken

    def shed_evicted(self, max_runs: int, max_bytes: int) -> list[ReadyRun]:
        """The oldest evicted runs past ``max_runs`` runs or ``max_bytes`` held, to be decided now and not scored.

        While scoring is behind, the ready line is full and nothing polls; traces wait in run assembly until its
        bounds evict them, and their runs waited here for the next poll, counted by no bound: an hour of scoring
        slower than arrival held every run of the overflow, with the spans of each filter view (#43, a review of
        the ready line: 195 runs and 4 MB held past a line of 2 and 5 traces). Past the line's own bounds they are
        handed on without their spans, marked ``shed``: their rules draw as usual, and a ``sampled`` draw is
        decided ``too_large`` with the reason, so coverage counts them and memory stays bounded. A filter view the
        rules now select is built in full first (a session rule added meanwhile takes its turn whole); a run
        already ``too_large`` (cut, or no root) stays so and is not counted as shed.
        """
        cut = 0
        left_bytes = self.evicted_bytes
        while cut < len(self._evicted) and (len(self._evicted) - cut > max_runs or left_bytes > max_bytes):
            left_bytes -= self._evicted[cut].held_bytes
            cut += 1
        if not cut:
            return []
        why = SHED_REASON.format(runs=max_runs, mib=max_bytes >> 20)
        selects = self.selects
        shed: list[ReadyRun] = []
        for item in self._evicted[:cut]:
            if item.complete is not None and (selects is None or selects(item.run)):
                try:
                    item = item.completed()
                except Exception:  # decided as the view it is (``_built_for_rules_now`` does the same)
                    logger.warning("a shed filter view could not be built in full run_id=%s", item.run.run_id)
            shed.append(replace(item, shed="" if item.too_large else why, complete=None, held_bytes=0))
        del self._evicted[:cut]
        self.evicted_bytes = left_bytes
        self.stats.runs_shed += sum(1 for item in shed if item.shed)
        return shed

    def _assemble(self, trace: _Trace) -> list[AssembledRun]:
        """The runs of a held trace, as views where no rule selects them (counted for ``selected_share``)."""
        share = self.selected_share
        runs = assemble_runs(
            trace.spans.values(), trace.logs, self.config, self.span_targets, self.selects, share.views_first()
        )
        if self.selects is not None:
            share.count(runs)
        return runs

    def _release(self, trace: _Trace) -> None:
        self.stats.pending_spans -= len(trace.spans) + len(trace.logs)
        self.stats.pending_bytes -= trace.size

    def _remember(self, trace_id: str, handled: dict[str, str]) -> None:
        self._done[trace_id] = handled
        self._done.move_to_end(trace_id)
        while len(self._done) > self.config.max_done_traces:
            self._done.popitem(last=False)

    # --- readiness --------------------------------------------------------------------------

    def poll_ready(self, now_ns: int) -> list[ReadyRun]:
        """Runs that became ready by ``now_ns``, each exactly once (plus rescores under the rescore policy)."""
        self._clock_ns = max(self._clock_ns, now_ns)
        config = self.config
        late_ns = int(config.late_span_window_s * _NS)
        # Every held trace is looked at, so the times are compared with bounds taken once (0.6 -> 0.3 µs a trace:
        # a poll of 35,000 traces, five polls a second, took a tenth of a core).
        quiet_by = now_ns - int(config.quiet_period_s * _NS)  # last arrival at or before: quiet
        waited_by = now_ns - int(config.max_wait_s * _NS)  # first arrival at or before: waited max_wait_s
        open_expired_by = waited_by - late_ns  # a trace not settled is forgotten this long after max_wait
        settled_expired_by = now_ns - late_ns  # a settled one this long after its last arrival
        ready = self.take_evicted()
        for trace_id, trace in list(self._pending.items()):
            quiet = trace.last_arrival_ns <= quiet_by
            waited = trace.first_arrival_ns <= waited_by
            if (trace.dirty and (quiet or waited)) or (trace.waiting and waited):
                ready.extend(self._ready_runs(trace_id, trace, quiet, waited))
            if (
                trace.first_arrival_ns <= open_expired_by
                if trace.ready_since_ns is None or trace.dirty or trace.waiting
                else trace.last_arrival_ns <= settled_expired_by
            ):
                del self._pending[trace_id]
                self._settled.pop(trace_id, None)
                self._revisited.pop(trace_id, None)
                self._release(trace)
                self._remember(trace_id, trace.handled)
        if len(self._settled) > config.max_settled_traces:
            self._enforce_bounds()  # traces settled just now: the oldest settled go (their runs are handed on)
        self.stats.pending_traces = len(self._pending)
        self.stats.runs_ready += sum(1 for item in ready if item.reason != "late_span_rescore")
        self.stats.runs_rescored += sum(1 for item in ready if item.reason == "late_span_rescore")
        return ready

    def _ready_runs(self, trace_id: str, trace: _Trace, quiet: bool, waited: bool) -> list[ReadyRun]:
        assembled = self._assemble(trace)
        out: list[ReadyRun] = []
        settled = True
        held = trace.size // max(1, len(assembled))
        for item in assembled:
            result = self._judge(trace, item, quiet, waited, held)
            if result is _WAIT:
                settled = False
            elif isinstance(result, ReadyRun):
                out.append(result)
        trace.dirty = False
        trace.waiting = not settled
        if settled and assembled:
            trace.ready_since_ns = trace.ready_since_ns or trace.last_arrival_ns
        if trace.ready_since_ns is not None and settled:
            self._settled[trace_id] = None
        else:
            self._settled.pop(trace_id, None)
        self._revisited.pop(trace_id, None)  # settled again, or waiting on a run of its own (evicted in order)
        return out

    def _judge(
        self, trace: _Trace, item: AssembledRun, quiet: bool, waited: bool, held: int
    ) -> ReadyRun | object | None:
        run_id = item.run.run_id
        # A filter view has none of what scorers read; "" never triggers a rescore (not asked for with rescore).
        fingerprint = run_fingerprint(item.run) if not item.view else ""
        if run_id in trace.handled:
            late = len(item.span_ids - trace.handled_spans)
            trace.handled_spans |= item.span_ids
            previous = trace.handled[run_id]
            if self.config.late_span_policy != "rescore" or previous in ("", fingerprint):
                self.stats.late_spans_ignored += late
                return None
            trace.handled[run_id] = fingerprint
            completion = self._completion(trace, item)
            return ReadyRun(item.run, "late_span_rescore", fingerprint, item.views, trace.too_large, completion, held)
        # A cut trace's missing root is among what was dropped: waiting for it would only delay the decision.
        if not (waited or (quiet and (item.root_confirmed or trace.too_large))):
            return _WAIT
        trace.handled[run_id] = fingerprint
        trace.handled_spans |= item.span_ids
        reason: ReadyReason = "quiet_period" if quiet and (item.root_confirmed or trace.too_large) else "max_wait"
        completion = self._completion(trace, item)
        return ReadyRun(item.run, reason, fingerprint, item.views, trace.too_large, completion, held)

    def _completion(self, trace: _Trace, item: AssembledRun) -> Callable[[], tuple[Run, tuple[Run, ...]]] | None:
        """How to build a filter view's run in full later: from the trace's spans as they are now."""
        if not item.view:
            return None
        spans, logs = tuple(trace.spans.values()), tuple(trace.logs)
        return functools.partial(full_run, spans, logs, self.config, self.span_targets, item.run.run_id)

    # --- restart ----------------------------------------------------------------------------

    def recover(self, source: SpanSource, since_ns: int, now_ns: int) -> int:
        """Reload traces that may hold runs not yet handled; returns how many traces were loaded.

        Reads spans stored since ``since_ns`` (``recovery_since``): a run older than that was ready before the
        restart, and storage says whether it was handled. Recovered spans count as arriving now, so their runs
        become ready after the quiet period.

        The source gives the latest traces first, and they are read ``recovery_chunk`` at a time and adopted until
        the traces still waiting hold half of any of the assembler's bounds (``adopt_within_room``): the rest is
        for the traffic that arrives meanwhile. Reading more only evicted what was read, each eviction a run
        decided early or ``too_large`` (a restart after LLM-sized traffic read 10,000 traces, about 500 MB of text,
        into 256 MiB). Undecided traces past that point are adopted later, in waves, as these are handed on
        (``scoring.recovery_waves``).
        """
        loaded, size = 0, self.recovery_chunk
        traces = iter(source.recent_traces(since_ns))
        while chunk := list(itertools.islice(traces, size)):
            taken = self.adopt_within_room(chunk, source.handled_runs([trace.trace_id for trace in chunk]), now_ns)
            loaded += taken
            if taken < len(chunk):
                logger.info("run assembler: recovery stopped at half its bounds after the latest %d traces", loaded)
                break
        return loaded

    @property
    def recovery_chunk(self) -> int:
        """Traces a recovery adopts between two looks at ``recovery_room``.

        ``RECOVERY_CHUNK``, or a tenth of ``max_pending_traces`` when that is less: what is read back at once
        (``adopt_within_room`` then stops within it at the bounds' half).
        """
        return max(1, min(RECOVERY_CHUNK, self.config.max_pending_traces // 10))

    def recovery_room(self) -> bool:
        """Whether a recovery may adopt more: the traces still waiting hold less than half of each bound.

        Settled traces (every run handed on) do not count: they are the first a bound evicts, and losing one
        costs only the attribution of a late span. Counting them stopped recovery's later waves while the first
        wave's traces sat settled for their late-span window.
        """
        return self._half_free(self._settled_load())

    def adopt_within_room(
        self, traces: list[RecoveredTrace], handled: Mapping[str, Mapping[str, bool]], now_ns: int
    ) -> int:
        """``adopt`` these traces in order while ``recovery_room`` holds; how many were adopted (a prefix).

        Looked at before each trace, so a chunk of large traces stops at the bounds' half too, not past it.
        """
        settled = self._settled_load()  # what adopting does not change (one lookup per chunk, not per trace)
        taken = 0
        for recovered in traces:
            if not self._half_free(settled):
                break
            taken += self.adopt([recovered], handled, now_ns)
        return taken

    def _settled_load(self) -> tuple[int, int, int]:
        """Traces, spans and bytes held by settled traces."""
        settled = [self._pending[trace_id] for trace_id in self._settled]
        return (
            len(settled),
            sum(len(trace.spans) + len(trace.logs) for trace in settled),
            sum(trace.size for trace in settled),
        )

    def _half_free(self, settled: tuple[int, int, int]) -> bool:
        """Whether the traces held, less ``settled``, are under half of each bound."""
        config, stats = self.config, self.stats
        traces, spans, size = (
            len(self._pending) - settled[0],
            stats.pending_spans - settled[1],
            stats.pending_bytes - settled[2],
        )
        return (
            2 * traces < config.max_pending_traces
            and 2 * spans < config.max_pending_spans
            and 2 * size < config.max_pending_bytes
        )

    def recovery_since(self, last_ns: int) -> int:
        """How far back a recovery reads from ``last_ns`` (the restart, or the latest span stored before it).

        A run older than this was ready before, and storage says if it was handled.
        """
        return last_ns - int((self.config.max_wait_s + self.config.late_span_window_s) * _NS)

    def adopt(self, traces: list[RecoveredTrace], handled: Mapping[str, Mapping[str, bool]], now_ns: int) -> int:
        """Hold traces read back from storage (already read, off the event loop); runs handled stay handled."""
        for recovered in traces:
            self.add_spans(recovered.spans, now_ns)
            self.add_logs(recovered.logs, now_ns)
            trace = self._pending.get(recovered.trace_id)
            marks = handled.get(recovered.trace_id, {})
            if trace is not None and marks:
                for item in assemble_runs(trace.spans.values(), trace.logs, self.config):
                    if is_handled(item, marks):
                        trace.handled[item.run.run_id] = ""
        self.stats.recovered_traces += len(traces)
        return len(traces)

    def pending_trace_ids(self) -> list[str]:
        """Trace ids held in memory, oldest first."""
        return list(self._pending)

    def unready_trace_ids(self) -> list[str]:
        """Trace ids held with runs not handed on yet (a settled trace only waits for late spans), oldest first.

        What a fleet replica stopping on purpose lists for its successors: a settled trace's runs were decided.
        """
        return [trace_id for trace_id in self._pending if trace_id not in self._settled]


SHED_REASON = (
    "scoring was behind: the trace was evicted at a bound while the ready line was full, and more runs waited for "
    "it than the line holds ({runs} runs or {mib} MiB; scoring.queue_size sets it)"
)
"""Why a shed run (``shed_evicted``) is not scored, as its ``too_large`` decision says."""

RECOVERY_CHUNK = 500
"""Traces a recovery adopts between two looks at the assembler's bounds (about 30 MB of LLM-sized text)."""
_WAIT = object()
_EVICTION_LOG_INTERVAL_NS = 10 * _NS
"""At most one warning line per interval for traces evicted before their runs were ready (with a count)."""
