"""Which dialect wins when several describe the same field of one span, and which spans need reading at all.

Extractors are chosen by which attributes a span carries, never by its
instrumentation scope: every extractor looks at every span that may carry
GenAI data, and the facts are merged field by field in ``PRECEDENCE`` order,
so the first dialect that has a value supplies it. Standard attributes come
first because they are the most precisely specified; framework-specific
attributes fill what they leave out; the older GenAI per-message events come
last because the current attributes replace them. docs/conventions.md
explains the order.

Most spans in a busy service are plain (HTTP handlers, database calls) and
say nothing about a run, yet they reach run assembly too. Each dialect
declares the attribute key prefixes it reads (``ATTRIBUTE_PREFIXES``, also
its own gate where it has one), and the GenAI module the event and log record
names it reads (``EVENT_PREFIXES``); ``span_facts`` answers a span with none
of them with empty facts without calling any extractor. A dialect's facts are
empty for such a span by its declaration, so the result is the same; the
collector's tests hold every extractor to its declaration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from spanscore.collector.conventions import (
    crewai_tracing,
    langfuse,
    mastra,
    openinference,
    openllmetry,
    otel_genai,
    pydantic_ai,
    vercel_ai,
)
from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.conventions.parsing import model_name
from spanscore.collector.conventions.tool_definitions import offered_tools
from spanscore.records import LogRecord, SpanRecord

Extractor = Callable[[SpanRecord], SpanFacts]


@dataclass(frozen=True, slots=True)
class Dialect:
    """A framework extractor and the attribute key prefixes outside which it finds nothing."""

    name: str
    extract: Extractor
    attribute_prefixes: tuple[str, ...]


PRECEDENCE: tuple[Dialect, ...] = (
    Dialect(openinference.DIALECT, openinference.extract, openinference.ATTRIBUTE_PREFIXES),
    Dialect(openllmetry.DIALECT, openllmetry.extract, openllmetry.ATTRIBUTE_PREFIXES),
    Dialect(mastra.DIALECT, mastra.extract, mastra.ATTRIBUTE_PREFIXES),
    Dialect(vercel_ai.DIALECT, vercel_ai.extract, vercel_ai.ATTRIBUTE_PREFIXES),
    Dialect(pydantic_ai.DIALECT, pydantic_ai.extract, pydantic_ai.ATTRIBUTE_PREFIXES),
    Dialect(crewai_tracing.DIALECT, crewai_tracing.extract, crewai_tracing.ATTRIBUTE_PREFIXES),
    Dialect(langfuse.DIALECT, langfuse.extract, langfuse.ATTRIBUTE_PREFIXES),
)
"""Framework dialects, after the GenAI attributes and before the GenAI events (see ``span_facts``)."""

ATTRIBUTE_PREFIXES: tuple[str, ...] = tuple(
    dict.fromkeys([*otel_genai.ATTRIBUTE_PREFIXES, *(p for dialect in PRECEDENCE for p in dialect.attribute_prefixes)])
)
"""A span without an attribute key starting with one of these gives no dialect anything to read."""
EVENT_PREFIXES: tuple[str, ...] = otel_genai.EVENT_PREFIXES
"""Span events and log records whose names start with none of these are read by no dialect."""


def may_carry_facts(span: SpanRecord, logs: Sequence[LogRecord] = ()) -> bool:
    """Whether any dialect could find something in ``span`` and its joined log records (cheap: names only)."""
    # Plain loops, not any(): this runs for every span, and most spans have no events or logs.
    for key in span.attributes:
        if key.startswith(ATTRIBUTE_PREFIXES):
            return True
    for event in span.events:
        if event.name.startswith(EVENT_PREFIXES):
            return True
    for log in logs:
        if log.event_name.startswith(EVENT_PREFIXES):
            return True
    return False


NO_FACTS = SpanFacts()
"""The facts of every span that ``may_carry_facts`` rules out: one shared object, read and never changed.

Most spans of an agent's trace (HTTP, database, framework internals) carry none, and readiness asks for the
facts of every span it holds; one object spares an allocation per span and lets a run with no facts at all be
recognised by identity (``runs.fields``)."""


def span_facts(span: SpanRecord, logs: Sequence[LogRecord] = ()) -> SpanFacts:
    """Everything the known dialects say about ``span`` (and its joined log records), merged by precedence.

    A span that ``may_carry_facts`` rules out gets ``NO_FACTS`` without running any extractor: callers read
    facts, they never change them.
    """
    if not may_carry_facts(span, logs):
        return NO_FACTS
    return _extract(span, logs, dialects_reading(span.attributes))


def view_facts(span: SpanRecord, logs: Sequence[LogRecord] = ()) -> SpanFacts:
    """The facts a run's filter view reads: ``span_facts`` without what only scorers read.

    A GenAI span's facts are most of what a run costs to read: its messages and tool calls are parsed from
    JSON, about 5 KB in a chat span. A filter view (``RunFields.filter_view``) reads only the span's kind, agent
    name and label, model, provider, session, user and error. So a span that may carry facts is read without
    its messages, finish reason, tool call and offered tools (``otel_genai.attribute_facts(who=True)``, no
    per-message events): every other fact is as ``span_facts`` reads it, sources included (the collector's
    tests hold this over arbitrary spans and the recorded fixtures). A span that may carry none gets
    ``NO_FACTS``, as from ``span_facts``: only facts other than it are partial. Run assembly reads full facts
    for the runs a rule selects, and for an agent span without a name, whose prompt decides whether it only
    wraps another agent (``runs.assembly``).
    """
    if not may_carry_facts(span, logs):
        return NO_FACTS
    return _extract(span, logs, dialects_reading(span.attributes), who=True)


def extract_facts(span: SpanRecord, logs: Sequence[LogRecord] = ()) -> SpanFacts:
    """Run every extractor on ``span``, with no pre-check; ``span_facts`` is the one to call.

    Order: GenAI attributes (on the span, then on joined detail logs); OpenInference; OpenLLMetry; Mastra;
    Vercel AI SDK; pydantic-ai; CrewAI's tracing; Langfuse; GenAI per-message events (span events, then logs).
    An opaque agent name gives way to a real one from a later dialect (``SpanFacts.merge``).
    """
    return _extract(span, logs, PRECEDENCE)


_READERS: dict[tuple[str, ...], tuple[int, ...]] = {}
"""Which dialects read a span (their places in ``PRECEDENCE``), by its attribute keys: one instrumentation sends
the same keys span after span."""
_READERS_MAX = 1024
"""Key sets remembered; past it the memory starts again (a client sending ever new keys costs only the check)."""
_READERS_KEY_CHARS = 2048
"""Only key sets this long in all are remembered, so the memory holds at most about 2 MiB of key text: a span's
keys may be up to ``max_name_chars`` long and many, and what is kept here is counted by no bound of the
assembler. Longer sets (flattened messages, ``llm.input_messages.N.*``) are checked each time."""


def dialects_reading(attributes: Mapping[str, object]) -> list[Dialect]:
    """The framework dialects with an attribute key of ``attributes`` among their declared prefixes, in order.

    A dialect finds nothing in a span with none of its keys (its declaration, which the collector's tests hold
    each extractor to), so ``span_facts`` runs and merges only these: a GenAI chat span skips six extractors and
    six merges, a quarter of its facts' cost (#43).
    """
    keys = tuple(attributes)
    found = _READERS.get(keys)
    if found is None:
        found = tuple(
            at
            for at, dialect in enumerate(PRECEDENCE)
            if any(key.startswith(dialect.attribute_prefixes) for key in keys)
        )
        if sum(map(len, keys)) <= _READERS_KEY_CHARS:
            if len(_READERS) >= _READERS_MAX:
                _READERS.clear()
            _READERS[keys] = found
    return [PRECEDENCE[at] for at in found]


def _extract(span: SpanRecord, logs: Sequence[LogRecord], dialects: Sequence[Dialect], who: bool = False) -> SpanFacts:
    """The dialects' facts merged in order; ``who``: without messages, tool call, events and offered tools."""
    facts = otel_genai.attribute_facts(span, logs, who=who)
    for dialect in dialects:
        facts.merge(dialect.extract(span))
    if not who:
        facts.merge(otel_genai.event_facts(span, logs))
        if facts.kind == "llm" and (offered := offered_tools(span.attributes)) is not None:
            facts.put("tools", *offered)
    model = model_name(facts.model, facts.provider)
    if model != facts.model:
        facts.model = model
        facts.sources["model"] += ", without the provider prefix"
    return facts
