"""Per-request and per-span limits applied between decoding and storage.

A request with more spans than allowed is refused whole (413 /
RESOURCE_EXHAUSTED) so nothing of it is half-stored. Oversized attribute
values are truncated with a visible marker, and attributes beyond the per-span
cap are dropped; both are counted so the loss is never silent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pydantic import BaseModel, ConfigDict, Field

from spanscore.collector.model import SpanRecord
from spanscore.collector.status import PayloadTooLargeError

TRUNCATION_MARKER = "...[truncated by spanscore: {dropped} more characters]"


class LimitsConfig(BaseModel):
    """Input limits; defaults are generous enough for long LLM conversations."""

    model_config = ConfigDict(extra="forbid")

    max_spans_per_request: int = Field(100_000, ge=1)
    """More spans than this in one export request refuses the request (413 / RESOURCE_EXHAUSTED)."""
    max_attribute_value_chars: int = Field(1_000_000, ge=64)
    """Longer attribute values are cut to this length plus a marker saying how much was dropped."""
    max_attributes_per_span: int = Field(1024, ge=1)
    """Attributes beyond this count are dropped (the first ones in request order are kept)."""


@dataclass(slots=True)
class LimitCounters:
    truncated_values: int = 0
    dropped_attributes: int = 0
    refused_requests: int = 0


def _limit_attributes(attributes: dict[str, str], config: LimitsConfig, counters: LimitCounters) -> dict[str, str]:
    if len(attributes) > config.max_attributes_per_span:
        counters.dropped_attributes += len(attributes) - config.max_attributes_per_span
        attributes = dict(list(attributes.items())[: config.max_attributes_per_span])
    longest = config.max_attribute_value_chars
    if any(len(value) > longest for value in attributes.values()):
        limited = {}
        for key, value in attributes.items():
            if len(value) > longest:
                counters.truncated_values += 1
                value = value[:longest] + TRUNCATION_MARKER.format(dropped=len(value) - longest)
            limited[key] = value
        attributes = limited
    return attributes


def apply_limits(spans: Sequence[SpanRecord], config: LimitsConfig, counters: LimitCounters) -> list[SpanRecord]:
    """Refuse an over-long request; return spans with their attributes within bounds."""
    if len(spans) > config.max_spans_per_request:
        counters.refused_requests += 1
        raise PayloadTooLargeError(
            f"request holds {len(spans)} spans; the limit is {config.max_spans_per_request} per request"
        )
    longest = config.max_attribute_value_chars
    out: list[SpanRecord] = []
    for span in spans:
        attributes = span.attributes
        if len(attributes) > config.max_attributes_per_span or any(len(v) > longest for v in attributes.values()):
            span = replace(span, attributes=_limit_attributes(attributes, config, counters))
        out.append(span)
    return out
