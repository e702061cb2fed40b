"""Which dialect wins when several describe the same field of one span.

Extractors are chosen by which attributes a span carries, never by its
instrumentation scope: every extractor looks at every span, and the facts are
merged field by field in ``PRECEDENCE`` order, so the first dialect that has a
value supplies it. Standard attributes come first because they are the most
precisely specified; framework-specific attributes fill what they leave out;
the older GenAI per-message events come last because the current attributes
replace them. docs/conventions.md explains the order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from spanscore.collector.conventions import mastra, openinference, openllmetry, otel_genai, vercel_ai
from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.model import LogRecord, SpanRecord

Extractor = Callable[[SpanRecord], SpanFacts]

PRECEDENCE: tuple[tuple[str, Extractor], ...] = (
    (openinference.DIALECT, openinference.extract),
    (openllmetry.DIALECT, openllmetry.extract),
    (mastra.DIALECT, mastra.extract),
    (vercel_ai.DIALECT, vercel_ai.extract),
)
"""Framework dialects, after the GenAI attributes and before the GenAI events (see ``span_facts``)."""


def span_facts(span: SpanRecord, logs: Sequence[LogRecord] = ()) -> SpanFacts:
    """Everything the known dialects say about ``span`` (and its joined log records), merged by precedence.

    Order: GenAI attributes (on the span, then on joined detail logs); OpenInference;
    OpenLLMetry; Mastra; Vercel AI SDK; GenAI per-message events (span events, then logs).
    """
    facts = otel_genai.attribute_facts(span, logs)
    for _, extract in PRECEDENCE:
        facts.merge(extract(span))
    facts.merge(otel_genai.event_facts(span, logs))
    return facts
