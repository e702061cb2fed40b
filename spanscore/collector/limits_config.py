"""What one export request and the strings in it may hold (``collector.limits``): the caps, apart from the code.

Apart from ``collector.limits`` so that decoding (``collector.bounds``) can read the count caps from this
object as configured, instead of keeping a copy of each.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LimitsConfig(BaseModel):
    """Input limits; defaults are generous enough for long LLM conversations."""

    model_config = ConfigDict(extra="forbid")

    max_spans_per_request: int = Field(100_000, ge=1)
    """More spans than this in one export request refuses the request (413 / RESOURCE_EXHAUSTED)."""
    max_log_records_per_request: int = Field(100_000, ge=1)
    """More log records than this in one export request refuses the request (413 / RESOURCE_EXHAUSTED)."""
    max_metric_points_per_request: int = Field(100_000, ge=1)
    """More metric data points than this in one export request refuses the request (413 / RESOURCE_EXHAUSTED)."""
    max_attribute_value_chars: int = Field(1_000_000, ge=64)
    """Longer span, event, link and log attribute values, log bodies and status messages are cut to this
    length plus a marker saying how much was dropped."""
    max_resource_attribute_value_chars: int = Field(4096, ge=64)
    """The same for resource and scope attribute values, which storage repeats on every row of the request."""
    max_name_chars: int = Field(4096, ge=64)
    """The same for names (span, event, scope, log event), scope versions, attribute keys, severity texts and
    trace states."""
    max_attributes_per_span: int = Field(1024, ge=1)
    """Attributes beyond this count in one set (a span's, an event's, a link's, a log record's, a resource's or
    a scope's) are dropped (the first ones in request order are kept)."""
    max_events_per_span: int = Field(128, ge=0)
    """Events beyond this count on one span are dropped while decoding (the first ones kept) and counted in
    ``span_events_dropped``; the OpenTelemetry SDK's span limit has the same default."""
    max_links_per_span: int = Field(128, ge=0)
    """Links beyond this count on one span are dropped while decoding and counted in ``span_links_dropped``."""
    max_attributes_per_event: int = Field(128, ge=0)
    """Attributes beyond this count on one span event are dropped while decoding (counted in
    ``attributes_dropped``)."""
    max_attributes_per_link: int = Field(128, ge=0)
    """The same for the attributes of one span link."""
    max_value_depth: int = Field(32, ge=1, le=64)
    """An attribute value or log body whose arrays and maps nest deeper than this refuses its span or log record
    (partial success naming the key); at most 64, below the 100 message levels protobuf itself parses."""
