"""From a trace's spans to agent runs: the unit that sampling decides on and scorers read.

A run is an agent span (``invoke_agent``, an OpenInference ``AGENT``, a
traceloop agent or workflow, a Mastra ``agent_run``, or a configured span
name) with all its descendants. An agent span without a name of its own
that only wraps a named agent span (the OpenAI Agents SDK's ``Agent
workflow``) is not a run: the named agent inside is. A trace without an agent span is one run
rooted at its root span. With ``nested_agents="outermost"`` an agent inside
another agent belongs to the outer run; with ``"all"`` every agent span is a
run of its own (and still part of its parents' runs).

Each span's facts come from the convention extractors (``conventions``); this
module picks, per run field, the span that speaks for the run: the root
first, then the run's other agent/chain spans, then its model calls (the
first call for the input and system prompt, the last for the output). Pure
functions, no clock: the readiness tracker decides when to call them.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from spanscore.collector.conventions import NO_FACTS, span_facts, view_facts
from spanscore.collector.conventions.facts import SpanFacts
from spanscore.records import LogRecord, SpanRecord
from spanscore.run import Run
from spanscore.runs.config import RunsConfig
from spanscore.runs.fields import RunFields
from spanscore.runs.views import span_views

__all__ = ["AssembledRun", "assemble_runs", "full_run", "run_fingerprint", "runs_from_spans"]


@dataclass(frozen=True, slots=True)
class AssembledRun:
    """A run plus what readiness needs to know about it."""

    run: Run
    root_confirmed: bool
    """The root span is the trace root, or (nested_agents="all") an agent span, or every ancestor up to the
    trace root is present. An unconfirmed root may still gain an enclosing run, so it waits for max_wait."""
    span_ids: frozenset[str]
    views: tuple[Run, ...] = ()
    """Span-level views (``runs.views``) of the targets asked for; empty unless ``span_targets`` named some."""
    view: bool = False
    """``run`` is only the run's filter view (``RunFields.filter_view``): no rule could select it."""


def runs_from_spans(
    spans: Iterable[SpanRecord], logs: Iterable[LogRecord] = (), config: RunsConfig | None = None
) -> list[Run]:
    """The agent runs in ``spans`` (any number of traces), in trace order then root start time."""
    return [assembled.run for assembled in assemble_runs(spans, logs, config)]


def assemble_runs(
    spans: Iterable[SpanRecord],
    logs: Iterable[LogRecord] = (),
    config: RunsConfig | None = None,
    span_targets: Collection[str] = (),
    selects: Callable[[Run], bool] | None = None,
    views_first: bool = True,
) -> list[AssembledRun]:
    """Like ``runs_from_spans`` but also says whether each run's root is confirmed and which spans it holds.

    ``span_targets`` (``llm``, ``tool``, ``retrieval``) asks for the span-level views of those targets too.
    ``selects`` (``runs.selection``) is asked about each run's filter view: a run it does not select is only
    that view (``view``); ``full_run`` builds the rest. ``views_first`` reads GenAI spans for the views only
    (``view_facts``) and in full once a run of theirs is selected; False reads every span in full at once,
    which costs less when most runs are selected (``SelectedShare``). The runs are the same either way.
    """
    config = config or RunsConfig()
    by_trace: dict[str, dict[str, SpanRecord]] = defaultdict(dict)
    for span in spans:
        by_trace[span.trace_id][span.span_id] = span
    logs_by_span: dict[tuple[str, str], list[LogRecord]] = defaultdict(list)
    for log in logs:
        if log.trace_id and log.span_id:
            logs_by_span[(log.trace_id, log.span_id)].append(log)
    out: list[AssembledRun] = []
    for trace_id, by_id in by_trace.items():
        out.extend(_trace_runs(trace_id, by_id, logs_by_span, config, span_targets, selects, views_first))
    return out


@dataclass(slots=True)
class SelectedShare:
    """Of the runs assembled lately under a selector, how many were built in full and how many stayed views.

    Reading GenAI spans for their filter views first (``view_facts``) saves their messages' parsing for every
    run no rule selects, and costs a second read of each span of a run that is selected. A rule without a
    ``where``, or one whose ``where`` every run matches (its sample rate does not count), selects every run: the
    first read is then wasted, about 1.4-1.7x the facts' cost (a review's count over the recorded fixtures). So
    views are read first only while at most half of the recent runs were selected; the counts halve past
    ``WINDOW`` runs, so the choice follows the traffic and the rules.
    """

    built: int = 0
    viewed: int = 0
    WINDOW = 4_000

    def views_first(self) -> bool:
        return self.built <= self.viewed

    def count(self, runs: Iterable[AssembledRun]) -> None:
        for item in runs:
            if item.view:
                self.viewed += 1
            else:
                self.built += 1
        if self.built + self.viewed > self.WINDOW:
            self.built, self.viewed = self.built // 2, self.viewed // 2


def _trace_runs(
    trace_id: str,
    by_id: dict[str, SpanRecord],
    logs_by_span: dict[tuple[str, str], list[LogRecord]],
    config: RunsConfig,
    span_targets: Collection[str] = (),
    selects: Callable[[Run], bool] | None = None,
    views_first: bool = True,
) -> list[AssembledRun]:
    views_only = selects is not None and views_first  # GenAI spans read for views until a run of theirs is selected
    facts = _trace_facts(trace_id, by_id, logs_by_span, view_facts if views_only else span_facts)
    partial = {span_id for span_id, read in facts.items() if read is not NO_FACTS} if views_only else set()

    def read_in_full(span_ids: Collection[str]) -> None:
        for span_id in span_ids:
            facts[span_id] = span_facts(by_id[span_id], logs_by_span.get((trace_id, span_id), ()))
        partial.difference_update(span_ids)

    placeholders = _placeholders(by_id) if not any(f.kind == "agent" for f in facts.values()) else {}
    for span_id, placeholder in placeholders.items():
        by_id[span_id] = placeholder
        facts[span_id] = span_facts(placeholder)
    children: dict[str, list[str]] = defaultdict(list)
    for span in sorted(by_id.values(), key=_start_key):
        if span.parent_span_id in by_id:
            children[span.parent_span_id].append(span.span_id)
    agents = {
        span_id
        for span_id, span in by_id.items()
        if facts[span_id].kind == "agent" or span.name in config.agent_span_names
    }
    # An agent without a name: its prompt decides whether it only wraps another.
    read_in_full([span_id for span_id in agents & partial if facts[span_id].agent_name is None])
    agents -= _wrapper_agents(agents, facts, children)
    roots = _run_roots(by_id, agents, config)
    runs = []
    for root_id in sorted(roots, key=lambda span_id: _start_key(by_id[span_id])):
        members = _descendants(root_id, children)
        fields = RunFields(by_id, facts, children, members, root_id, config)
        confirmed = root_id not in placeholders and _confirmed(root_id, by_id, root_id in agents, config)
        if selects is not None:
            view = fields.filter_view()
            if not selects(view):
                runs.append(AssembledRun(view, confirmed, frozenset(members), view=True))
                continue
            if partial:
                read_in_full(list(partial))
                fields = RunFields(by_id, facts, children, members, root_id, config)
        run = fields.build()
        views = span_views(run, members, by_id, facts, span_targets) if span_targets else ()
        runs.append(AssembledRun(run, confirmed, frozenset(members), views))
    return runs


def _trace_facts(
    trace_id: str,
    by_id: dict[str, SpanRecord],
    logs_by_span: dict[tuple[str, str], list[LogRecord]],
    read: Callable[[SpanRecord, Sequence[LogRecord]], SpanFacts],
) -> dict[str, SpanFacts]:
    """``read`` of every span of one trace, with the log records joined to it."""
    if logs_by_span:
        return {span_id: read(span, logs_by_span.get((trace_id, span_id), ())) for span_id, span in by_id.items()}
    return {span_id: read(span, ()) for span_id, span in by_id.items()}  # most traces: no key to build per span


def full_run(
    spans: tuple[SpanRecord, ...],
    logs: tuple[LogRecord, ...],
    config: RunsConfig,
    span_targets: Collection[str],
    run_id: str,
) -> tuple[Run, tuple[Run, ...]]:
    """The run ``run_id`` of a trace's ``spans`` built in full, with its span views: a filter view completed."""
    for item in assemble_runs(spans, logs, config, span_targets):
        if item.run.run_id == run_id:
            return item.run, item.views
    raise ValueError(f"run {run_id} is not among the runs of its trace's spans")


def _wrapper_agents(agents: set[str], facts: dict[str, SpanFacts], children: dict[str, list[str]]) -> set[str]:
    """Agent spans that only wrap a named agent: no agent name or prompt of their own, a named agent below them.

    The OpenAI Agents SDK (through OpenInference) opens an ``Agent workflow`` span of the agent kind
    around the real agent's span; the run, its scores and its agent name belong to the agent inside.
    An unnamed agent span that holds the prompt is the run, and the agent inside names it (a CrewAI
    task, whose agent span is sent the task inside CrewAI's framing).
    """
    wrappers = set()
    for span_id in agents:
        if facts[span_id].agent_name is not None or facts[span_id].input is not None:
            continue
        stack, seen = list(children.get(span_id, ())), {span_id}
        while stack:
            child = stack.pop()
            if child in seen:  # parent links can form a cycle in bad input
                continue
            seen.add(child)
            if child in agents and facts[child].agent_name is not None:
                wrappers.add(span_id)
                break
            stack.extend(children.get(child, ()))
    return wrappers


def _placeholders(by_id: dict[str, SpanRecord]) -> dict[str, SpanRecord]:
    """Stand-ins for missing parents when the trace root has not arrived.

    Orphans that share a missing parent form one run rooted at that parent's id, so the run keeps
    its identity when the real span arrives later (a late span of the same run, not a new run).
    """
    if any(not span.parent_span_id for span in by_id.values()):
        return {}
    orphans: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in by_id.values():
        if span.parent_span_id not in by_id:
            orphans[span.parent_span_id].append(span)
    return {
        parent_id: SpanRecord(
            trace_id=group[0].trace_id,
            span_id=parent_id,
            parent_span_id="",
            name="",
            kind="Unspecified",
            start_time_ns=min(span.start_time_ns for span in group),
            end_time_ns=max(span.end_time_ns for span in group),
            service_name=group[0].service_name,
            resource_attributes=group[0].resource_attributes,
            # ``rv`` is set once per trace and propagated to every span, so the stand-in root carries
            # the same sampling randomness the missing root would have.
            trace_state=group[0].trace_state,
        )
        for parent_id, group in orphans.items()
    }


def _run_roots(by_id: dict[str, SpanRecord], agents: set[str], config: RunsConfig) -> list[str]:
    if agents:
        if config.nested_agents == "all":
            return list(agents)
        return [span_id for span_id in agents if not _has_agent_ancestor(span_id, by_id, agents)]
    true_roots = [span_id for span_id, span in by_id.items() if not span.parent_span_id]
    if true_roots:
        return true_roots
    return [span_id for span_id, span in by_id.items() if span.parent_span_id not in by_id]


def _ancestors(span_id: str, by_id: dict[str, SpanRecord]) -> Iterable[str]:
    seen = {span_id}
    parent = by_id[span_id].parent_span_id
    while parent in by_id and parent not in seen:
        seen.add(parent)
        yield parent
        parent = by_id[parent].parent_span_id


def _has_agent_ancestor(span_id: str, by_id: dict[str, SpanRecord], agents: set[str]) -> bool:
    return any(ancestor in agents for ancestor in _ancestors(span_id, by_id))


def _confirmed(root_id: str, by_id: dict[str, SpanRecord], is_agent: bool, config: RunsConfig) -> bool:
    if not by_id[root_id].parent_span_id:
        return True
    if is_agent and config.nested_agents == "all":
        return True
    top = root_id
    for ancestor in _ancestors(root_id, by_id):
        top = ancestor
    return not by_id[top].parent_span_id


def _descendants(root_id: str, children: dict[str, list[str]]) -> list[str]:
    order, stack, seen = [], [root_id], set()
    while stack:
        span_id = stack.pop()
        if span_id in seen:
            continue
        seen.add(span_id)
        order.append(span_id)
        stack.extend(reversed(children.get(span_id, ())))
    return order


def _start_key(span: SpanRecord) -> tuple[int, str]:
    return (span.start_time_ns, span.span_id)


def run_fingerprint(run: Run) -> str:
    """A digest of what scorers read (not ids or timing): equal fingerprints mean a rescore would change nothing."""
    content = (
        run.input, run.output, run.system, run.context, run.ground_truth, run.tool_calls, run.model, run.finish_reasons,
    )  # fmt: skip
    return hashlib.sha256(repr(content).encode()).hexdigest()[:32]
