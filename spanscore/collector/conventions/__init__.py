"""Semantic-convention extractors: one module per dialect, merged by ``precedence``."""

from spanscore.collector.conventions.facts import SpanFacts
from spanscore.collector.conventions.precedence import span_facts

__all__ = ["SpanFacts", "span_facts"]
