"""Which span of a run speaks for each field of the canonical ``Run``.

Span facts are already merged across dialects (``precedence``); here the
run's spans are merged into one run. Per field, in order:

- input and system prompt: the root span, then the run's other agent and chain
  spans by start time, then its model calls by start time (the first call's
  non-system messages are the input, from its last user turn on, since a
  later turn's first call is sent the session's history too);
- output: the root span, then agent and chain spans by end time (latest
  first), then the last model call's output;
- tool calls: every tool span (name, arguments, result, id) by start time (a tool
  span inside another for the same call fills it in and is not a call of its own),
  plus tool calls the model requested that no tool span reports, with the
  result the model was later shown (matched by tool call id), and calls only a later model call's
  history shows (an output that left them out, ``runs.turns``); a result that is a JSON
  object or array is re-serialised in one spelling (frameworks differ in whitespace);
  a last call that only hands the answer back (its one argument and its result
  are the output) is the framework's answer tool and is left out (``spanscore.answer``);
- context: the documents of every retrieval span, by start time;
- model and provider: the first model call, then the root; agent name,
  session and user: the root, then the other spans by start time (an agent
  name that only a span's own name suggests comes after every named one, and after a
  name the user gives: ``runs.agent_names``);
- usage: the sum over spans that report tokens and have no descendant that
  does (so an agent's total and its calls' counts are not added twice); their
  cost likewise, when every one of those spans recorded it (``runs.cost``).

A field no span supplies stays ``None`` (missing), never an empty string; an
input or output whose text is empty or whitespace is missing too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from spanscore.answer import without_answer_tool
from spanscore.collector.conventions import NO_FACTS
from spanscore.collector.conventions.facts import SpanFacts, fill_tool
from spanscore.collector.conventions.parsing import canonical_json
from spanscore.records import SpanRecord
from spanscore.run import Message, ModelUsage, Run, ToolCall, Usage
from spanscore.runs.agent_names import given_agent_name
from spanscore.runs.config import RunsConfig
from spanscore.runs.cost import recorded_cost
from spanscore.runs.turns import history_calls, users_turn

_SPEAKERS = ("agent", "chain", None)


class RunFields:
    """Builds one ``Run`` from the facts of its member spans."""

    def __init__(
        self,
        by_id: dict[str, SpanRecord],
        facts: dict[str, SpanFacts],
        children: dict[str, list[str]],
        members: list[str],
        root_id: str,
        config: RunsConfig,
    ) -> None:
        self._by_id = by_id
        self._facts = facts
        self._children = children
        self._root = root_id
        self._config = config
        self._members = sorted(members, key=lambda span_id: (by_id[span_id].start_time_ns, span_id))
        self._sources: dict[str, str] = {}
        self._picked: dict[str, str] = {}
        others = [m for m in self._members if m != root_id]
        self._speakers = [m for m in others if facts[m].kind in _SPEAKERS]
        self._calls = [m for m in self._members if facts[m].kind == "llm"]

    def build(self) -> Run:
        root = self._by_id[self._root]
        by_end = sorted(self._speakers, key=lambda m: -self._by_id[m].end_time_ns)
        calls_by_end = sorted(self._calls, key=lambda m: -self._by_id[m].end_time_ns)
        first = [self._root, *self._speakers, *self._calls]
        output = self._said("output", [self._root, *by_end, *calls_by_end])
        return Run(
            self._input(first),
            output,
            system=self._pick("system", first),
            context=self._documents(),
            ground_truth=self._ground_truth(root),
            tool_calls=without_answer_tool(self._tool_calls(), output),
            **self._who(),
            usage=self._usage(),
            error=self._error(root),
            sources=self._sources,
            finish_reasons=self._finish_reasons([self._root, *by_end]),
            version_attributes=self._version_attributes(),
            **_root_fields(root),
        )

    def filter_view(self) -> Run:
        """The run as far as a rule's ``where`` and a decision row read it, without what only scorers read.

        Every field a filter can see (``sampling.subject``: ids, service, agent name, model, provider, session,
        user, error, duration, the root's attributes and resource) is picked exactly as ``build`` picks it;
        input, output, tool calls, context, usage and the rest stay empty. Readiness hands this on in place of
        the run when no rule can select it (``runs.selection``): every rule then decides ``filtered_out``.
        """
        root = self._by_id[self._root]
        view = Run(**self._who(), error=self._error(root), sources=self._sources, **_root_fields(root))
        self._sources, self._picked = {}, {}  # a full build after it records its sources in its own order
        return view

    def _who(self) -> dict[str, Any]:
        """Model, provider, agent name, session and user, in the order ``build`` has always picked them."""
        everyone = [self._root, *[m for m in self._members if m != self._root]]
        if all(self._facts[m] is NO_FACTS for m in everyone):
            # No span says anything (most runs of plain traces): only a name the user gave can name the agent.
            name = self._agent_label(everyone)
            return {"model": None, "provider": None, "agent_name": name, "session_id": None, "user_id": None}
        return {
            "model": self._pick("model", [*self._calls, *everyone]),
            "provider": self._pick("provider", [*self._calls, *everyone]),
            "agent_name": self._pick("agent_name", everyone) or self._agent_label(everyone),
            "session_id": self._pick("session_id", everyone),
            "user_id": self._pick("user_id", everyone),
        }

    def _finish_reasons(self, speakers: list[str]) -> tuple[str | None, ...] | None:
        """Each model call's finish reason, in the order the calls ended; else the agent's own (root first).

        Most instrumentations put it on the model-call span (or inside its output messages), not on
        the agent span, so a run read only at its root would never see a cut answer.
        """
        calls = sorted(self._calls, key=lambda m: (self._by_id[m].end_time_ns, m))
        reasons = tuple(self._facts[m].finish_reason for m in calls)
        if any(reason is not None for reason in reasons):
            last = next(m for m in reversed(calls) if self._facts[m].finish_reason is not None)
            self._sources["finish_reasons"] = self._source(last, self._facts[last].sources.get("finish_reason", ""))
            return reasons
        own = self._pick("finish_reason", speakers)
        if own is not None:
            self._sources["finish_reasons"] = self._sources.pop("finish_reason")
        return None if own is None else (own,)

    def _source(self, span_id: str, source: str) -> str:
        return source if span_id == self._root else f"{source} (span {self._by_id[span_id].name!r})"

    def _pick(self, name: str, candidates: Iterable[str]) -> Any:
        for span_id in candidates:
            value = getattr(self._facts[span_id], name)
            if value is not None:
                self._sources[name] = self._source(span_id, self._facts[span_id].sources.get(name, ""))
                self._picked[name] = span_id
                return value
        return None

    def _said(self, name: str, candidates: list[str]) -> tuple[Message, ...] | None:
        """The picked input or output, or None when its text is empty or whitespace: nothing to score.

        A scorer given an empty answer reports confident nonsense (completeness 1.0 over nothing), so an
        empty field is missing and every scorer that needs it answers ``missing_input``.
        """
        messages: tuple[Message, ...] | None = self._pick(name, candidates)
        if messages is None:
            return None
        probe = Run(input=messages) if name == "input" else Run(output=messages)
        text = probe.input_text if name == "input" else probe.output_text
        if text is None or not text.strip():
            self._sources.pop(name, None)
            return None
        return messages

    def _input(self, candidates: list[str]) -> tuple[Message, ...] | None:
        """The picked input; when only a model call supplies it, the user's own turn, not the history before it.

        An agent span that records no input of its own leaves the prompt to its first model call, which in a
        later turn of a session is sent the whole conversation so far; the turn's prompt is what the user
        added after it.
        """
        messages = self._said("input", candidates)
        span_id = self._picked.get("input")
        if messages is None or span_id == self._root or span_id not in self._calls:
            return messages
        turn = users_turn(messages)
        if len(turn) != len(messages):
            self._sources["input"] += ", the last user turn"
        return turn

    def _agent_label(self, candidates: list[str]) -> str | None:
        """A name the user gave (resource attribute, config rule), else one the span names suggest."""
        given = given_agent_name([self._by_id[m] for m in candidates], self._config)
        if given is not None:
            self._sources["agent_name"] = given[1]
            return given[0]
        label = self._pick("agent_label", candidates)
        if label is not None:
            self._sources["agent_name"] = self._sources.pop("agent_label")
        return label  # type: ignore[no-any-return]

    def _documents(self) -> tuple[str, ...] | None:
        holders = [m for m in self._members if self._facts[m].documents is not None]
        if not holders:
            return None
        self._sources["context"] = self._source(holders[0], self._facts[holders[0]].sources["documents"])
        return tuple(doc for m in holders for doc in self._facts[m].documents or ())

    def _version_attributes(self) -> dict[str, str]:
        """The first value of each configured version attribute: root span, its resource, model calls, the rest."""
        keys = self._config.version_attributes
        order = [self._root, *self._calls, *(m for m in self._members if m != self._root and m not in self._calls)]
        holders = [
            attributes
            for span in (self._by_id[m] for m in order)
            for attributes in (span.attributes, span.resource_attributes)
            if not attributes.keys().isdisjoint(keys)
        ]
        found: dict[str, str] = {}
        for key in keys:
            value = next((attributes[key] for attributes in holders if attributes.get(key)), None)
            if value is not None:
                found[key] = str(value)
        return found

    def _ground_truth(self, root: SpanRecord) -> str | None:
        keys = self._config.ground_truth_keys
        spans = [root, *(self._by_id[m] for m in self._members if m != self._root)]
        # Maps holding none of the keys are dropped first (one C-level check each): most runs have no
        # ground truth, and a key-by-key search over every span cost more than the rest of assembly.
        holders = [
            (attributes, where)
            for span in spans
            for attributes, where in ((span.attributes, "span"), (span.resource_attributes, "resource"))
            if not attributes.keys().isdisjoint(keys)
        ]
        for key in keys:
            for attributes, where in holders:
                if attributes.get(key):
                    self._sources["ground_truth"] = f"{where} attribute {key}"
                    return attributes[key]
        return None

    def _tool_calls(self) -> tuple[ToolCall, ...] | None:
        results: dict[str, str] = {}
        for m in self._members:
            results.update(self._facts[m].tool_results)
        timed = self._tool_spans()
        requested = [
            (self._by_id[m].end_time_ns, call)
            for m in self._calls
            for message in self._facts[m].output or ()
            for call in message.tool_calls
        ]
        # A later model call's history shows the calls the run's earlier calls made; the first call's history
        # is from before the run.
        later = [(self._by_id[m].start_time_ns, self._facts[m].input) for m in self._calls[1:]]
        requested += history_calls(later, requested)
        spoke = any(self._facts[m].output is not None for m in [self._root, *self._calls])
        if not timed and not requested and not spoke:
            return None
        timed = _merge_requested(timed, requested)
        timed.sort(key=lambda item: item[0])
        calls = []
        for order, (_, call) in enumerate(timed):
            result = call.result
            if result is None and call.id is not None:
                result = results.get(call.id)
            calls.append(replace(call, result=canonical_json(result), order=order))
        self._sources["tool_calls"] = (
            "tool spans" if any(self._facts[m].tool for m in self._members) else "model output"
        )
        return tuple(calls)

    def _tool_spans(self) -> list[tuple[int, ToolCall]]:
        """Each tool span's call with its start time; a tool span inside one for the same call is not another call.

        Two instrumentations may each open a span for one tool execution (AutoGen's own ``execute_tool``
        span inside OpenInference's tool span): the inner one fills what the outer one lacks (the call id).
        """
        calls: dict[str, ToolCall] = {}
        for m in self._members:
            call = self._facts[m].tool
            if call is None:
                continue
            call = self._with_status(m, call)
            outer = self._enclosing_call(m, call, calls)
            if outer is None:
                calls[m] = call
            else:
                calls[outer] = fill_tool(calls[outer], call)
        return [(self._by_id[m].start_time_ns, call) for m, call in calls.items()]

    def _with_status(self, span_id: str, call: ToolCall) -> ToolCall:
        """The call marked failed when its span ended in an error status or reports an error type."""
        span, facts = self._by_id[span_id], self._facts[span_id]
        if call.error is not None or (span.status_code != "Error" and facts.error is None):
            return call
        error = (span.status_message or facts.error or "error") if span.status_code == "Error" else facts.error
        return replace(call, error=error)

    def _enclosing_call(self, span_id: str, call: ToolCall, calls: dict[str, ToolCall]) -> str | None:
        """The nearest enclosing tool span that reports the same call (same tool, no other call id), if any.

        The search stops at a model call or an agent: a tool run by a model or agent inside a tool is a call of
        its own.
        """
        parent, seen = self._by_id[span_id].parent_span_id, {span_id}
        while parent in self._by_id and parent not in seen:
            seen.add(parent)
            outer = calls.get(parent)
            if outer is not None:
                same_id = outer.id is None or call.id is None or outer.id == call.id
                return parent if outer.name == call.name and same_id else None
            if parent == self._root or self._facts[parent].kind in ("llm", "agent"):
                return None
            parent = self._by_id[parent].parent_span_id
        return None

    def _usage(self) -> Usage:
        counted = [m for m in self._members if _has_tokens(self._facts[m])]
        covered: set[str] = set()
        for span_id in counted:
            parent = self._by_id[span_id].parent_span_id
            while parent in self._by_id and parent not in covered:
                covered.add(parent)
                parent = self._by_id[parent].parent_span_id
        leaves = [m for m in counted if m not in covered]
        if leaves:
            self._sources["usage"] = self._facts[leaves[0]].sources.get("input_tokens") or self._facts[
                leaves[0]
            ].sources.get("output_tokens", "")
        costs = [recorded_cost(self._by_id[m].attributes) for m in leaves]
        known = [c for c in costs if c is not None]
        return Usage(
            input_tokens=sum(self._facts[m].input_tokens or 0 for m in leaves),
            output_tokens=sum(self._facts[m].output_tokens or 0 for m in leaves),
            cost_usd=sum(known) if known and len(known) == len(costs) else None,  # a part is not the whole
            by_model=_by_model([self._facts[m] for m in leaves]),
        )

    def _error(self, root: SpanRecord) -> str | None:
        facts = self._facts[self._root]
        if root.status_code == "Error":
            self._sources["error"] = "span status"
            return root.status_message or facts.error or "error"
        if facts.error is not None:
            self._sources["error"] = facts.sources.get("error", "")
        return facts.error


def _root_fields(root: SpanRecord) -> dict[str, Any]:
    """What a run takes from its root span as it is: ids, service, times, attributes, tracestate."""
    return {
        "run_id": root.span_id,
        "trace_id": root.trace_id,
        "span_id": root.span_id,
        "service_name": root.service_name or root.resource_attributes.get("service.name") or None,
        "start_time_ns": root.start_time_ns,
        "end_time_ns": root.end_time_ns,
        "attributes": root.attributes,
        "resource_attributes": root.resource_attributes,
        "trace_state": root.trace_state,
    }


def _by_model(calls: list[SpanFacts]) -> tuple[ModelUsage, ...]:
    """Each model's tokens over the counted calls, when they name more than one model (else the run's model says it)."""
    totals: dict[tuple[str | None, str | None], list[int]] = {}
    for facts in calls:
        tokens = totals.setdefault((facts.model, facts.provider), [0, 0])
        tokens[0] += facts.input_tokens or 0
        tokens[1] += facts.output_tokens or 0
    if len({model for model, _ in totals}) < 2:
        return ()
    return tuple(ModelUsage(model, provider, i, o) for (model, provider), (i, o) in totals.items())


def _has_tokens(facts: SpanFacts) -> bool:
    return facts.input_tokens is not None or facts.output_tokens is not None


def _merge_requested(
    timed: list[tuple[int, ToolCall]], requested: list[tuple[int, ToolCall]]
) -> list[tuple[int, ToolCall]]:
    """Add requested calls that no tool span reports; fill a tool span's missing id or arguments from its request.

    A request matches a tool span by call id when both have one, else by tool name.
    """
    merged = list(timed)
    taken: set[int] = set()
    for time_ns, call in requested:
        index = _matching_span_call(merged, call, taken)
        if index is None:
            merged.append((time_ns, call))
            taken.add(len(merged) - 1)
            continue
        taken.add(index)
        span_time, span_call = merged[index]
        merged[index] = (
            span_time,
            replace(
                span_call,
                id=span_call.id or call.id,
                arguments=_better_arguments(span_call.arguments, call.arguments),
            ),
        )
    return merged


def _better_arguments(span_arguments: Any, requested: Any) -> Any:
    """The tool span's arguments, unless they are text where the model's request has the structured form.

    Some instrumentations record a tool's input as the framework passed it to the function (LangChain
    gives a one-argument tool the bare value, ``"Paris"``); the model's request holds the arguments
    the model actually sent, by name.
    """
    if span_arguments is None or (not isinstance(span_arguments, Mapping) and isinstance(requested, Mapping)):
        return requested
    return span_arguments


def _matching_span_call(merged: list[tuple[int, ToolCall]], call: ToolCall, taken: set[int]) -> int | None:
    for index, (_, candidate) in enumerate(merged):
        if index in taken:
            continue
        if call.id is not None and candidate.id is not None:
            if candidate.id == call.id:
                return index
        elif candidate.name == call.name:
            return index
    return None
