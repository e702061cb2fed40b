"""Semantic-convention extractors: one module per dialect, merged by ``precedence``."""

from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.conventions.precedence import NO_FACTS, span_facts, view_facts

__all__ = ["NO_FACTS", "SpanFacts", "span_facts", "view_facts"]
